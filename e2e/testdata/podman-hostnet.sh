#!/bin/sh
# podman, as podman-compose 1.0.3 (Debian 12) should call it for host networking.
#
# That podman-compose adds `--net <project>_default --network-alias <service>` to every
# container it runs, even one with `network_mode: host`, and podman refuses the mix ("cannot
# set multiple networks without bridge network mode"; containers/podman-compose#397, fixed in
# later releases). e2e/podman_test.go passes this script as `podman-compose --podman-path`: for
# a `run` or `create` that asks for a non-bridge mode (host, none, ns:PATH, container:ID) it
# drops those two options and passes every other argument, in order, to podman. Anything else
# goes to podman untouched.
set -eu

special() { case $1 in host | none | ns:* | container:*) return 0 ;; esac; return 1; }

found=
prev=
for a in "$@"; do
	case $prev in --network | --net) special "$a" && found=1 ;; esac
	case $a in --network=* | --net=*) special "${a#*=}" && found=1 ;; esac
	prev=$a
done
case ${1:-} in run | create) ;; *) found= ;; esac
[ -n "$found" ] || exec podman "$@"

# Rebuild the arguments without `--net X` (X a bridge network) and `--network-alias X`.
skip=      # the next argument is the value of a dropped option
netopt=    # the previous argument was --net: keep the pair only for a non-bridge mode
first=1
for a in "$@"; do
	if [ -n "$first" ]; then
		set --
		first=
	fi
	if [ -n "$skip" ]; then
		skip=
		continue
	fi
	if [ -n "$netopt" ]; then
		netopt=
		special "$a" && set -- "$@" --net "$a"
		continue
	fi
	case $a in
	--net) netopt=1 ;;
	--network-alias) skip=1 ;;
	--network-alias=*) ;;
	--net=*) special "${a#*=}" && set -- "$@" "$a" ;;
	*) set -- "$@" "$a" ;;
	esac
done
exec podman "$@"

package actors

import (
	"strconv"
	"strings"
)

// givenNames are the actors' preferredUsernames: stable and human-readable,
// so a user debugging federation by hand can tell alice@flood3.test from
// bob@flood3.test at a glance. Every origin uses the same sequence. A
// function rather than a package variable, so nothing can change it.
func givenNames() [40]string {
	return [40]string{
		"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
		"mallory", "niaj", "olivia", "peggy", "quentin", "rupert", "sybil", "trent", "ursula", "victor",
		"walter", "xena", "yusuf", "zoe", "amara", "bruno", "chiara", "dmitri", "elif", "farah",
		"goran", "hana", "ines", "jonas", "kemal", "lena", "mateo", "nadia", "oskar", "priya",
	}
}

// ActorName is the preferredUsername of the i-th (0-based) actor of every
// origin: the given names in order, then the same names with a round
// number appended ("alice2", …) once they run out.
func ActorName(i int) string {
	names := givenNames()
	n := len(names)
	if i < n {
		return names[i]
	}
	return names[i%n] + strconv.Itoa(i/n+1)
}

// DisplayName is the display name ("name") of the Person username on host:
// the username capitalised, then the host ("Alice of flood3.test"). Usernames
// repeat on every origin, as in the fediverse, but display names must not:
// some servers drop Likes from different actors that share one as duplicates.
// The instance actors' display names are their hosts, which never contain
// " of ", so no two actors of a world share a display name.
func DisplayName(username, host string) string {
	if username == "" {
		return host
	}
	return strings.ToUpper(username[:1]) + username[1:] + " of " + host
}

// actorIndex is the inverse of ActorName: the index whose name is name,
// false for a name ActorName never makes ("alice1", "alice02", "Alice").
// It costs the same for any world size, so a lookup never walks actors;
// round numbers beyond seven digits (more actors than a world may have)
// are refused before any arithmetic can overflow.
func actorIndex(name string) (int, bool) {
	end := len(name) // the digits trimmed by hand: TrimRight builds its set on every call
	for end > 0 && name[end-1] >= '0' && name[end-1] <= '9' {
		end--
	}
	base := name[:end]
	round := 0
	if digits := name[len(base):]; digits != "" {
		n, err := strconv.Atoi(digits)
		if len(digits) > 7 || err != nil || n < 2 || strconv.Itoa(n) != digits {
			return 0, false
		}
		round = n - 1
	}
	names := givenNames()
	for k, g := range names {
		if g == base {
			i := round*len(names) + k
			if i < 0 {
				return 0, false
			}
			return i, true
		}
	}
	return 0, false
}

package actors

import "strconv"

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

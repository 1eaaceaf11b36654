package traffic

import "testing"

// A Ticket's request leaves first as it was signed, written by the
// dispatcher when it can be, unless something holds it or a Knocker
// knocking twice decides its first header.
func TestTicketFirstAsSigned(t *testing.T) {
	waiting := make(chan struct{})
	for _, c := range []struct {
		name string
		t    *Ticket
		want bool
	}{
		// A plain send: a Create, a Like.
		{"plain", &Ticket{}, true},
		// Kept for later (a note) but holding nothing now.
		{"vocabulary, not held", &Ticket{Vocab: &VocabSent{Note: true}}, true},
		// A Delete waiting for its object to be recorded gone.
		{"held", &Ticket{Vocab: &VocabSent{gone: waiting}}, false},
		// A Delete whose object is recorded gone: it waits for nothing.
		{"held no longer", &Ticket{Vocab: &VocabSent{gone: closedChan()}}, true},
		// The double knock chooses the first scheme, and may sign again.
		{"knocked twice", &Ticket{Knock: &Knock{k: NewKnocker(SignatureBoth, nil)}}, false},
		// One scheme: the first attempt goes as signed (the Knocker only
		// counts it).
		{"knocked once, cavage", &Ticket{Knock: &Knock{k: NewKnocker(SignatureCavage, nil)}}, true},
		{"knocked once, rfc9421", &Ticket{Knock: &Knock{k: NewKnocker(SignatureRFC9421, nil)}}, true},
		// Knocking once, but held: a Delete still waits.
		{"knocked once, held", &Ticket{Knock: &Knock{k: NewKnocker(SignatureCavage, nil)}, Vocab: &VocabSent{gone: waiting}}, false},
	} {
		if got := c.t.FirstAsSigned(); got != c.want {
			t.Errorf("%s: FirstAsSigned %v, want %v", c.name, got, c.want)
		}
	}
}

func closedChan() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

package loadrun

import (
	"strconv"
	"strings"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/signing"
)

// Value is a command-line flag's value that parses its text once, as the
// flag is set, into one of Config's typed fields, with the flood's own
// parser; its errors name the flag. It is a pflag.Value (and a
// flag.Value), so a CLI binds Config's fields without the flood's types.
type Value interface {
	String() string
	Set(string) error
	Type() string
}

// value is a Value of a T, read by parse and shown by show.
type value[T any] struct {
	p     *T
	parse func(string) (T, error)
	show  func(T) string
	kind  string
}

func (v *value[T]) String() string {
	if v.p == nil {
		return ""
	}
	return v.show(*v.p)
}

func (v *value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v *value[T]) Type() string { return v.kind }

// textValue is a Value of a string type whose parser says what it takes.
func textValue[T ~string](p *T, parse func(string) (T, error), kind string) Value {
	return &value[T]{p: p, parse: parse, show: func(x T) string { return string(x) }, kind: kind}
}

// RateValue is --rate into c.Rates: a rate, or a comma list (a ladder).
func RateValue(c *Config) Value { return &ratesValue{c: c} }

// RampValue is --ramp into c.Rates: from:to:step, a ladder.
func RampValue(c *Config) Value { return &ratesValue{c: c, ramp: true} }

// ratesValue is --rate or --ramp: both set Config.Rates, and Ramp says
// which did.
type ratesValue struct {
	c    *Config
	ramp bool
}

func (v *ratesValue) String() string {
	if v.c == nil || v.c.Ramp != v.ramp {
		return ""
	}
	s := make([]string, len(v.c.Rates))
	for i, r := range v.c.Rates {
		s[i] = strconv.FormatFloat(r, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func (v *ratesValue) Set(s string) error {
	parse := flood.ParseRates
	if v.ramp {
		parse = flood.ParseRamp
	}
	rates, err := parse(s)
	if err != nil {
		return err
	}
	v.c.Rates, v.c.Ramp = rates, v.ramp
	return nil
}

func (v *ratesValue) Type() string {
	if v.ramp {
		return "from:to:step"
	}
	return "rates"
}

// MixValue is --mix: weights of activity types, e.g. create=6,like=3.
func MixValue(p *record.Mix) Value {
	return &value[record.Mix]{p: p, parse: record.ParseMix, show: record.Mix.String, kind: "mix"}
}

// SigningValue is --signing: pipeline, presign or jit.
func SigningValue(p *traffic.SigningMode) Value { return textValue(p, traffic.ParseSigning, "mode") }

// ArrivalsValue is --arrivals: constant or poisson.
func ArrivalsValue(p *flood.Arrivals) Value { return textValue(p, flood.ParseArrivals, "process") }

// ClientValue is --client: nethttp or fast.
func ClientValue(p *flood.Client) Value { return textValue(p, flood.ParseClient, "client") }

// SignerNiceValue is --signer-nice: auto (traffic.NiceAuto) or 0 to 19.
func SignerNiceValue(p *int) Value {
	return &value[int]{p: p, parse: traffic.ParseSignerNice, show: traffic.FormatSignerNice, kind: "nice"}
}

// PriorityValue is --dispatcher-priority: auto, realtime or normal.
func PriorityValue(p *flood.Priority) Value {
	return textValue(p, flood.ParsePriority, "priority")
}

// InboxValue is --inbox: auto, shared or personal.
func InboxValue(p *traffic.InboxMode) Value { return textValue(p, traffic.ParseInboxMode, "mode") }

// SignatureValue is --signature: cavage, rfc9421 or both.
func SignatureValue(p *traffic.SignatureScheme) Value {
	return textValue(p, traffic.ParseSignature, "scheme")
}

// AlgorithmValue is --algorithm, the signature's algorithm label, in
// lower case; Validate says whether the crowd signs with it.
func AlgorithmValue(p *signing.Algorithm) Value {
	lower := func(s string) (signing.Algorithm, error) {
		return signing.Algorithm(strings.ToLower(strings.TrimSpace(s))), nil
	}
	return textValue(p, lower, "label")
}

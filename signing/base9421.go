package signing

import (
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// message9421 is an HTTP message as an RFC 9421 signature base sees it: a
// request, or a response (status set) with its own fields.
type message9421 struct {
	req    *http.Request // the request; nil for a response
	status int           // a response's status code; 0 for a request
	header http.Header   // the message's fields
}

// signatureBase builds the RFC 9421 §2.5 signature base of a request over
// comps (component identifiers as coveredComponents lists them) and
// params (the serialised signature parameters, @signature-params' value).
func signatureBase(req *http.Request, comps []string, params string) ([]byte, error) {
	return message9421{req: req, header: req.Header}.signatureBase(comps, params)
}

// signatureBase builds m's RFC 9421 §2.5 signature base.
func (m message9421) signatureBase(comps []string, params string) ([]byte, error) {
	var b []byte
	for _, c := range comps {
		name, param, _ := strings.Cut(c, ";")
		val, err := m.component(name, param)
		if err != nil {
			return nil, err
		}
		if strings.ContainsAny(val, "\r\n") {
			return nil, rfcErr(ErrMalformedSignature, "component %q contains a newline", c)
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"')
		if param != "" {
			b = append(b, ';')
			b = append(b, param...)
		}
		b = append(b, ": "...)
		b = append(b, val...)
		b = append(b, '\n')
	}
	b = append(b, `"@signature-params": `...)
	b = append(b, params...)
	return b, nil
}

// component is the value of one covered component (§2.1, §2.2). param is
// the component's parameter text (`name="Pet"` for @query-param), or "".
func (m message9421) component(name, param string) (string, error) {
	if name == "@signature-params" {
		return "", rfcErr(ErrMalformedSignature, "@signature-params must not be covered")
	}
	if name == "@status" {
		if m.req != nil {
			return "", rfcErr(ErrMalformedSignature, "@status is covered but the message is a request")
		}
		return strconv.Itoa(m.status), nil
	}
	if strings.HasPrefix(name, "@") {
		if m.req == nil {
			return "", rfcErr(ErrUnsupportedAlgorithm, "derived component %q of a response's request is not supported", name)
		}
		return requestComponent(m.req, name, param)
	}
	if name != strings.ToLower(name) {
		return "", rfcErr(ErrMalformedSignature, "component %q is not lower-case", name)
	}
	var vals []string
	if name == "host" && m.req != nil && len(m.header["Host"]) == 0 && m.req.Host != "" {
		vals = []string{m.req.Host} // a server keeps Host out of the header map
	} else {
		vals = m.header[textproto.CanonicalMIMEHeaderKey(name)]
	}
	if len(vals) == 0 {
		return "", rfcErr(ErrMalformedSignature, "covered header %q is not in the message", name)
	}
	var val strings.Builder
	for i, v := range vals {
		if i > 0 {
			val.WriteString(", ")
		}
		val.WriteString(strings.TrimSpace(v))
	}
	return val.String(), nil
}

// requestComponent is the value of a request's derived component (§2.2).
func requestComponent(req *http.Request, name, param string) (string, error) {
	scheme := requestScheme(req)
	authority := strings.ToLower(req.Host)
	if authority == "" && req.URL != nil {
		authority = strings.ToLower(req.URL.Host)
	}
	if scheme == "https" {
		authority = strings.TrimSuffix(authority, ":443")
	} else if scheme == "http" {
		authority = strings.TrimSuffix(authority, ":80")
	}
	pq := pathAndQuery(req)
	path, query, _ := strings.Cut(pq, "?")
	switch name {
	case "@method":
		return methodName(req), nil
	case "@authority":
		return authority, nil
	case "@scheme":
		return scheme, nil
	case "@target-uri":
		return scheme + "://" + authority + pq, nil
	case "@request-target":
		return pq, nil
	case "@path":
		return path, nil
	case "@query":
		return "?" + query, nil
	case "@query-param":
		return queryParam(query, param)
	}
	return "", rfcErr(ErrUnsupportedAlgorithm, "derived component %q is not supported", name)
}

// queryParam is @query-param's value (§2.2.8): the query parsed as
// application/x-www-form-urlencoded, the named parameter's value encoded
// again. param is `name="…"`, the name as the signer encoded it. A name
// that appears more than once is refused: which value was signed would be
// ambiguous.
func queryParam(query, param string) (string, error) {
	want, err := strconv.Unquote(strings.TrimPrefix(param, "name="))
	if err != nil || !strings.HasPrefix(param, "name=") {
		return "", rfcErr(ErrMalformedSignature, "@query-param parameter %q is not name=\"…\"", param)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", rfcErr(ErrMalformedSignature, "query %q: %v", query, err)
	}
	var vals []string
	for k, vs := range q {
		if url.QueryEscape(k) == want {
			vals = append(vals, vs...)
		}
	}
	switch len(vals) {
	case 0:
		return "", rfcErr(ErrMalformedSignature, "@query-param %s is not in the query", want)
	case 1:
		return url.QueryEscape(vals[0]), nil
	}
	return "", rfcErr(ErrMalformedSignature, "@query-param %s appears %d times in the query", want, len(vals))
}

// requestScheme is the scheme the request arrived over: the URL's (client
// side), TLS on the connection, X-Forwarded-Proto from a proxy, else http.
func requestScheme(req *http.Request) string {
	if req.URL != nil && req.URL.Scheme != "" {
		return strings.ToLower(req.URL.Scheme)
	}
	if req.TLS != nil {
		return "https"
	}
	if p := req.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		return p
	}
	return "http"
}

//go:build cgo

package signing

/*
#if defined(CROWD_OPENSSL_CHECK) || (!defined(CROWD_OPENSSL_DECLARED) && __has_include(<openssl/evp.h>))
#define CROWD_OPENSSL_HEADERS 1
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#endif

#if !defined(CROWD_OPENSSL_HEADERS) || defined(CROWD_OPENSSL_CHECK)
// What is called here, declared as OpenSSL 3.0's headers declare it, for
// a machine that has its shared library (Debian's libssl3, libssl3t64
// from Debian 13, which nearly everything needs) but not its headers
// (libssl-dev), as a new machine may: the first `go run ./cmd/crowd
// serve` builds there. OpenSSL keeps these signatures within a major
// version; the constants are those of rsa.h, evp.h, obj_mac.h and
// crypto.h. CROWD_OPENSSL_DECLARED uses them where the headers are, and
// CROWD_OPENSSL_CHECK compiles them beside the headers, where a type that
// differs is an error and each constant is asserted: CI does both
// (.ci/run).
#include <stddef.h>
typedef struct evp_pkey_st EVP_PKEY;
typedef struct evp_pkey_ctx_st EVP_PKEY_CTX;
typedef struct evp_md_st EVP_MD;
typedef struct engine_st ENGINE;
#ifndef CROWD_OPENSSL_CHECK
#define OPENSSL_VERSION 0
#define EVP_PKEY_RSA 6
#define RSA_PKCS1_PADDING 1
#define RSA_PKCS1_PSS_PADDING 6
#define RSA_PSS_SALTLEN_DIGEST -1
#define RSA_PSS_SALTLEN_AUTO -2
#define RSA_PSS_SALTLEN_MAX -3
#else
_Static_assert(OPENSSL_VERSION == 0, "OPENSSL_VERSION");
_Static_assert(EVP_PKEY_RSA == 6, "EVP_PKEY_RSA");
_Static_assert(RSA_PKCS1_PADDING == 1, "RSA_PKCS1_PADDING");
_Static_assert(RSA_PKCS1_PSS_PADDING == 6, "RSA_PKCS1_PSS_PADDING");
_Static_assert(RSA_PSS_SALTLEN_DIGEST == -1, "RSA_PSS_SALTLEN_DIGEST");
_Static_assert(RSA_PSS_SALTLEN_AUTO == -2, "RSA_PSS_SALTLEN_AUTO");
_Static_assert(RSA_PSS_SALTLEN_MAX == -3, "RSA_PSS_SALTLEN_MAX");
#endif
const char *OpenSSL_version(int type);
unsigned long ERR_get_error(void);
void ERR_error_string_n(unsigned long e, char *buf, size_t len);
void ERR_clear_error(void);
const EVP_MD *EVP_sha256(void);
const EVP_MD *EVP_sha384(void);
const EVP_MD *EVP_sha512(void);
EVP_PKEY *d2i_PrivateKey(int type, EVP_PKEY **a, const unsigned char **pp, long length);
EVP_PKEY *d2i_PUBKEY(EVP_PKEY **a, const unsigned char **pp, long length);
void EVP_PKEY_free(EVP_PKEY *pkey);
EVP_PKEY_CTX *EVP_PKEY_CTX_new(EVP_PKEY *pkey, ENGINE *e);
void EVP_PKEY_CTX_free(EVP_PKEY_CTX *ctx);
int EVP_PKEY_sign_init(EVP_PKEY_CTX *ctx);
int EVP_PKEY_verify_init(EVP_PKEY_CTX *ctx);
int EVP_PKEY_CTX_set_rsa_padding(EVP_PKEY_CTX *ctx, int pad_mode);
int EVP_PKEY_CTX_set_signature_md(EVP_PKEY_CTX *ctx, const EVP_MD *md);
int EVP_PKEY_CTX_set_rsa_mgf1_md(EVP_PKEY_CTX *ctx, const EVP_MD *md);
int EVP_PKEY_CTX_set_rsa_pss_saltlen(EVP_PKEY_CTX *ctx, int saltlen);
int EVP_PKEY_sign(EVP_PKEY_CTX *ctx, unsigned char *sig, size_t *siglen, const unsigned char *tbs, size_t tbslen);
int EVP_PKEY_verify(EVP_PKEY_CTX *ctx, const unsigned char *sig, size_t siglen, const unsigned char *tbs, size_t tbslen);
#endif

// The EVP_MD of a Go crypto.Hash number (crypto.SHA256 is 5, SHA384 6,
// SHA512 7); NULL for 0 (a raw PKCS#1 v1.5 block, as Go signs with hash 0).
static const EVP_MD *crowd_md(int hash) {
	switch (hash) {
	case 5: return EVP_sha256();
	case 6: return EVP_sha384();
	case 7: return EVP_sha512();
	}
	return NULL;
}

static EVP_PKEY *crowd_private(const unsigned char *der, long len) {
	const unsigned char *p = der;
	return d2i_PrivateKey(EVP_PKEY_RSA, NULL, &p, len);
}

static EVP_PKEY *crowd_public(const unsigned char *der, long len) {
	const unsigned char *p = der;
	return d2i_PUBKEY(NULL, &p, len);
}

// crowd_err moves the first error of this thread's queue into buf and
// clears the queue: the queue is per thread and a goroutine may run on
// another thread next time, so nothing may be left in it.
static void crowd_err(char *buf, size_t n) {
	unsigned long e = ERR_get_error();
	if (e != 0) {
		ERR_error_string_n(e, buf, n);
	} else if (n > 0) {
		buf[0] = 0;
	}
	ERR_clear_error();
}

// crowd_ctx makes the per-call context of one key operation: PKCS#1 v1.5,
// or PSS with salt length saltlen (OpenSSL's RSA_PSS_SALTLEN_* values), over
// a digest of hash. EVP_PKEY_CTX is not shareable between threads; the
// EVP_PKEY under it is.
static EVP_PKEY_CTX *crowd_ctx(EVP_PKEY *pkey, int sign, int hash, int pss, int saltlen) {
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pkey, NULL);
	if (ctx == NULL) {
		return NULL;
	}
	const EVP_MD *md = crowd_md(hash);
	int ok = (sign ? EVP_PKEY_sign_init(ctx) : EVP_PKEY_verify_init(ctx)) > 0
		&& EVP_PKEY_CTX_set_rsa_padding(ctx, pss ? RSA_PKCS1_PSS_PADDING : RSA_PKCS1_PADDING) > 0
		&& (md == NULL || EVP_PKEY_CTX_set_signature_md(ctx, md) > 0)
		&& (!pss || (EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) > 0 && EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, saltlen) > 0));
	if (!ok) {
		EVP_PKEY_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

// crowd_new_ctx is crowd_ctx with the error, if any, moved into err.
static EVP_PKEY_CTX *crowd_new_ctx(EVP_PKEY *pkey, int sign, int hash, int pss, int saltlen, char *err, size_t errlen) {
	EVP_PKEY_CTX *ctx = crowd_ctx(pkey, sign, hash, pss, saltlen);
	if (ctx == NULL) {
		crowd_err(err, errlen);
	}
	return ctx;
}

// crowd_sign and crowd_verify run one operation on a context crowd_ctx
// made; a context serves any number of operations, one at a time.
static int crowd_sign(EVP_PKEY_CTX *ctx, const unsigned char *dgst, size_t dlen,
		unsigned char *sig, size_t *siglen, char *err, size_t errlen) {
	int ok = EVP_PKEY_sign(ctx, sig, siglen, dgst, dlen) > 0;
	if (!ok) {
		crowd_err(err, errlen);
	}
	return ok;
}

static int crowd_verify(EVP_PKEY_CTX *ctx, const unsigned char *dgst, size_t dlen,
		const unsigned char *sig, size_t siglen, char *err, size_t errlen) {
	int ok = EVP_PKEY_verify(ctx, sig, siglen, dgst, dlen) == 1;
	if (!ok) {
		crowd_err(err, errlen);
	}
	return ok;
}
*/
import "C"

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"io"
	"runtime"
	"sync"
	"unsafe"
	"weak"
)

// libcrypto is the OpenSSL 3 backend. Each private key is parsed into an
// EVP_PKEY once (PrivateKey); each public key once, on its first
// verification, kept while the *rsa.PublicKey lives (a weak map: the
// KeyCache's eviction frees it). An EVP_PKEY is shared by every goroutine;
// each operation makes its own EVP_PKEY_CTX.
type libcrypto struct {
	pubs sync.Map // weak.Pointer[rsa.PublicKey] -> *evpKey
}

// evpKey owns one EVP_PKEY, and the contexts of its most common
// operation kept ready (PKCS#1 v1.5 over SHA-256: every rsa-sha256 and
// hs2019 signature): making a context costs about 2 % of a signature and
// 17 % of a verification (measured with OpenSSL 3.0). A cleanup of its
// owner frees it all (freeEVP).
type evpKey struct {
	p     *C.EVP_PKEY
	sign  bool                 // a private key's (sign) or a public key's (verify) contexts
	ready chan *C.EVP_PKEY_CTX // at most cap idle contexts; a context serves one goroutine at a time
}

func newEVPKey(p *C.EVP_PKEY, sign bool) *evpKey {
	return &evpKey{p: p, sign: sign, ready: make(chan *C.EVP_PKEY_CTX, min(8, max(2, runtime.GOMAXPROCS(0))))}
}

// ctx returns a context for an operation over hash (PSS with salt when
// pss); pooled reports whether it came from (and may go back to) ready.
func (k *evpKey) ctx(hash crypto.Hash, pss bool, salt int, errBuf *C.char, errLen C.size_t) (ctx *C.EVP_PKEY_CTX, pooled bool) {
	pooled = hash == crypto.SHA256 && !pss
	if pooled {
		select {
		case c := <-k.ready:
			return c, true
		default:
		}
	}
	return C.crowd_new_ctx(k.p, cbool(k.sign), C.int(hash), cbool(pss), C.int(salt), errBuf, errLen), pooled
}

// done gives back a context ctx returned: to ready when it was pooled,
// there is room and the operation succeeded; otherwise it is freed.
func (k *evpKey) done(ctx *C.EVP_PKEY_CTX, pooled, ok bool) {
	if pooled && ok {
		select {
		case k.ready <- ctx:
			return
		default:
		}
	}
	C.EVP_PKEY_CTX_free(ctx)
}

func newLibcrypto() (Backend, error) { return &libcrypto{}, nil }

func (*libcrypto) Name() string { return BackendLibcrypto }

func (*libcrypto) Describe() string {
	return BackendLibcrypto + " (" + C.GoString(C.OpenSSL_version(C.OPENSSL_VERSION)) + ")"
}

// libcryptoKey is a private key whose signatures libcrypto makes.
type libcryptoKey struct {
	k   *rsa.PrivateKey
	evp *evpKey
}

func (b *libcrypto) PrivateKey(k *rsa.PrivateKey) (Key, error) {
	if k == nil {
		return nil, fmt.Errorf("%w: nil RSA key", ErrUnsupportedAlgorithm)
	}
	if err := checkRSAPublic(&k.PublicKey); err != nil {
		return nil, err
	}
	der := x509.MarshalPKCS1PrivateKey(k)
	p := C.crowd_private((*C.uchar)(unsafe.SliceData(der)), C.long(len(der)))
	if p == nil {
		var buf [256]C.char
		C.crowd_err(&buf[0], C.size_t(len(buf)))
		return nil, fmt.Errorf("%w: libcrypto cannot load the RSA key: %s", ErrUnsupportedAlgorithm, C.GoString(&buf[0]))
	}
	key := &libcryptoKey{k: k, evp: newEVPKey(p, true)}
	runtime.AddCleanup(key, freeEVP, key.evp)
	return key, nil
}

// freeEVP frees k's idle contexts and its EVP_PKEY: its owner is gone, so
// nothing uses them any more.
func freeEVP(k *evpKey) {
	for {
		select {
		case c := <-k.ready:
			C.EVP_PKEY_CTX_free(c)
		default:
			C.EVP_PKEY_free(k.p)
			return
		}
	}
}

// Public is the key's *rsa.PublicKey.
func (k *libcryptoKey) Public() crypto.PublicKey { return &k.k.PublicKey }

// BackendName is BackendLibcrypto.
func (k *libcryptoKey) BackendName() string { return BackendLibcrypto }

// Sign signs digest as *rsa.PrivateKey.Sign does (rand is not read: PKCS#1
// v1.5 needs no randomness and OpenSSL salts PSS from its own generator).
func (k *libcryptoKey) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	hash := opts.HashFunc()
	pss, salt := false, 0
	if o, ok := opts.(*rsa.PSSOptions); ok {
		pss, salt = true, pssSignSalt(o)
	}
	if err := checkDigest(hash, digest); err != nil {
		return nil, err
	}
	sig := make([]byte, k.k.Size())
	n := C.size_t(len(sig))
	var buf [256]C.char
	ctx, pooled := k.evp.ctx(hash, pss, salt, &buf[0], C.size_t(len(buf)))
	ok := C.int(0)
	if ctx != nil {
		ok = C.crowd_sign(ctx, cbytes(digest), C.size_t(len(digest)), (*C.uchar)(unsafe.SliceData(sig)), &n, &buf[0], C.size_t(len(buf)))
		k.evp.done(ctx, pooled, ok == 1)
	}
	runtime.KeepAlive(k)
	if ok != 1 {
		return nil, fmt.Errorf("libcrypto sign: %s", C.GoString(&buf[0]))
	}
	return sig[:n], nil
}

func (b *libcrypto) VerifyPKCS1v15(pub *rsa.PublicKey, hash crypto.Hash, hashed, sig []byte) error {
	return b.verify(pub, hash, hashed, sig, false, 0)
}

func (b *libcrypto) VerifyPSS(pub *rsa.PublicKey, hash crypto.Hash, digest, sig []byte, opts *rsa.PSSOptions) error {
	if opts != nil && opts.Hash != 0 {
		hash = opts.Hash
	}
	return b.verify(pub, hash, digest, sig, true, pssVerifySalt(opts))
}

func (b *libcrypto) verify(pub *rsa.PublicKey, hash crypto.Hash, digest, sig []byte, pss bool, salt int) error {
	if err := checkRSAPublic(pub); err != nil {
		return err
	}
	if err := checkDigest(hash, digest); err != nil {
		return err
	}
	if len(sig) != pub.Size() {
		return rsa.ErrVerification // as crypto/rsa: a signature of the wrong length never verifies
	}
	k, err := b.public(pub)
	if err != nil {
		return err
	}
	var buf [256]C.char
	ctx, pooled := k.ctx(hash, pss, salt, &buf[0], C.size_t(len(buf)))
	ok := C.int(0)
	if ctx != nil {
		ok = C.crowd_verify(ctx, cbytes(digest), C.size_t(len(digest)), cbytes(sig), C.size_t(len(sig)), &buf[0], C.size_t(len(buf)))
		k.done(ctx, pooled, ok == 1)
	}
	runtime.KeepAlive(pub) // pub's cleanup frees k
	if ok != 1 {
		return rsa.ErrVerification
	}
	return nil
}

// public returns pub's EVP_PKEY, parsing it on first use. It lives as long
// as pub does: a cleanup on pub removes it from the map and frees it.
func (b *libcrypto) public(pub *rsa.PublicKey) (*evpKey, error) {
	wp := weak.Make(pub)
	if v, ok := b.pubs.Load(wp); ok {
		return v.(*evpKey), nil
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedAlgorithm, err)
	}
	p := C.crowd_public((*C.uchar)(unsafe.SliceData(der)), C.long(len(der)))
	if p == nil {
		var buf [256]C.char
		C.crowd_err(&buf[0], C.size_t(len(buf)))
		return nil, fmt.Errorf("%w: libcrypto cannot load the RSA public key: %s", ErrUnsupportedAlgorithm, C.GoString(&buf[0]))
	}
	k := newEVPKey(p, false)
	if v, loaded := b.pubs.LoadOrStore(wp, k); loaded {
		C.EVP_PKEY_free(p) // another goroutine parsed it first
		return v.(*evpKey), nil
	}
	runtime.AddCleanup(pub, b.forget, wp)
	return k, nil
}

// forget frees the EVP_PKEY of a public key that is gone.
func (b *libcrypto) forget(wp weak.Pointer[rsa.PublicKey]) {
	if v, ok := b.pubs.LoadAndDelete(wp); ok {
		freeEVP(v.(*evpKey))
	}
}

// pssSignSalt maps a PSS salt length as crypto/rsa signs with it to OpenSSL's:
// auto (0) is as long as possible, EqualsHash the hash's size.
func pssSignSalt(o *rsa.PSSOptions) int {
	switch o.SaltLength {
	case rsa.PSSSaltLengthAuto:
		return C.RSA_PSS_SALTLEN_MAX
	case rsa.PSSSaltLengthEqualsHash:
		return C.RSA_PSS_SALTLEN_DIGEST
	}
	return o.SaltLength
}

// pssVerifySalt maps a PSS salt length as crypto/rsa verifies with it to
// OpenSSL's: auto (0, and nil options) is read from the signature.
func pssVerifySalt(o *rsa.PSSOptions) int {
	if o == nil || o.SaltLength == rsa.PSSSaltLengthAuto {
		return C.RSA_PSS_SALTLEN_AUTO
	}
	if o.SaltLength == rsa.PSSSaltLengthEqualsHash {
		return C.RSA_PSS_SALTLEN_DIGEST
	}
	return o.SaltLength
}

// checkDigest refuses what crypto/rsa refuses: a hash libcrypto is not
// asked for here, or a digest of the wrong length.
func checkDigest(hash crypto.Hash, digest []byte) error {
	switch hash {
	case 0:
		return nil
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
		if len(digest) != hash.Size() {
			return fmt.Errorf("%w: %d-byte digest for %s", rsa.ErrVerification, len(digest), hash)
		}
		return nil
	}
	return fmt.Errorf("%w: hash %s (libcrypto backend: SHA-256, SHA-384 or SHA-512)", ErrUnsupportedAlgorithm, hash)
}

// checkRSAPublic refuses the public keys crypto/rsa refuses, so that a
// key no Go verifier accepts is accepted by no backend: under 1024 bits
// (Go's minimum since 1.24), an even modulus, an exponent below 3, even,
// or over 2^31-1.
func checkRSAPublic(pub *rsa.PublicKey) error {
	switch {
	case pub == nil || pub.N == nil:
		return fmt.Errorf("%w: no RSA modulus", ErrUnsupportedAlgorithm)
	case pub.N.BitLen() < 1024:
		return fmt.Errorf("%w: %d-bit RSA key (at least 1024, as crypto/rsa)", ErrUnsupportedAlgorithm, pub.N.BitLen())
	case pub.N.Bit(0) == 0:
		return fmt.Errorf("%w: even RSA modulus", ErrUnsupportedAlgorithm)
	case pub.E < 3 || pub.E&1 == 0 || pub.E > 1<<31-1:
		return fmt.Errorf("%w: RSA exponent %d", ErrUnsupportedAlgorithm, pub.E)
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// cbytes is b's first byte for C (nil for an empty b: C gets a length of 0).
func cbytes(b []byte) *C.uchar { return (*C.uchar)(unsafe.SliceData(b)) }

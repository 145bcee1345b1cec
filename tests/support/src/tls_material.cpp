// SPDX-License-Identifier: Apache-2.0
#include "edgelock/testing/tls_material.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "temp_dir.hpp"

namespace edgelock::testing {
namespace {

constexpr long hour_s = 3600;
constexpr long day_s = 24 * hour_s;
constexpr const char* server_alt_names = "IP:127.0.0.1,IP:::1,DNS:localhost";

struct pkey_free {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct x509_free {
    void operator()(X509* cert) const { X509_free(cert); }
};
struct bio_free {
    void operator()(BIO* bio) const { BIO_free(bio); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;
using bio_ptr = std::unique_ptr<BIO, bio_free>;

[[noreturn]] void fail(const std::string& step) {
    char reason[256] = "no OpenSSL error";
    if (const unsigned long code = ERR_get_error(); code != 0)
        ERR_error_string_n(code, reason, sizeof reason);
    ERR_clear_error();
    throw std::runtime_error("tls_material: " + step + ": " + reason);
}

// What one certificate says about its subject. Validity is relative to now, in seconds.
struct profile {
    std::string common_name;
    bool authority = false;       // a CA: signs certificates, is not a TLS endpoint
    std::string alt_names;        // subjectAltName; "" for none
    std::string extended_usage;   // extendedKeyUsage; "" for a CA
    long not_before_s = -hour_s;  // an hour of slack for clocks that differ a little
    long not_after_s = day_s;
};

// A certificate issued by `issuer` (or self-signed when issuer is null) with its key.
struct issued {
    pkey_ptr key;
    x509_ptr cert;
};

pkey_ptr new_key() {
    pkey_ptr key(EVP_EC_gen("P-256"));
    if (!key) fail("EVP_EC_gen");
    return key;
}

void set_common_name(X509* cert, const std::string& name) {
    X509_NAME* subject = X509_get_subject_name(cert);
    const auto* bytes = reinterpret_cast<const unsigned char*>(name.c_str());
    if (X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, bytes, -1, -1, 0) != 1)
        fail("subject name");
}

// `value` in openssl.cnf syntax, e.g. "critical,CA:TRUE"; the context names issuer and subject
// (for the key identifiers).
void add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX context;
    X509V3_set_ctx(&context, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value.c_str());
    if (extension == nullptr) fail("extension " + value);
    const int added = X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
    if (added != 1) fail("add extension " + value);
}

void add_extensions(X509* cert, X509* issuer, const profile& p) {
    add_extension(cert, issuer, NID_subject_key_identifier, "hash");
    if (p.authority) {
        add_extension(cert, issuer, NID_basic_constraints, "critical,CA:TRUE");
        add_extension(cert, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
        return;
    }
    add_extension(cert, issuer, NID_authority_key_identifier, "keyid:always");
    add_extension(cert, issuer, NID_basic_constraints, "critical,CA:FALSE");
    add_extension(cert, issuer, NID_key_usage, "critical,digitalSignature");
    add_extension(cert, issuer, NID_ext_key_usage, p.extended_usage);
    if (!p.alt_names.empty()) add_extension(cert, issuer, NID_subject_alt_name, p.alt_names);
}

issued issue(const profile& p, const issued* issuer, long serial) {
    issued out{new_key(), x509_ptr(X509_new())};
    X509* cert = out.cert.get();
    if (cert == nullptr) fail("X509_new");
    X509* issuer_cert = issuer ? issuer->cert.get() : cert;
    EVP_PKEY* signing_key = issuer ? issuer->key.get() : out.key.get();

    if (X509_set_version(cert, X509_VERSION_3) != 1 ||
        ASN1_INTEGER_set(X509_get_serialNumber(cert), serial) != 1 ||
        X509_gmtime_adj(X509_getm_notBefore(cert), p.not_before_s) == nullptr ||
        X509_gmtime_adj(X509_getm_notAfter(cert), p.not_after_s) == nullptr) {
        fail("certificate fields of " + p.common_name);
    }
    set_common_name(cert, p.common_name);
    if (X509_set_issuer_name(cert, X509_get_subject_name(issuer_cert)) != 1 ||
        X509_set_pubkey(cert, out.key.get()) != 1) {
        fail("issuer or key of " + p.common_name);
    }
    add_extensions(cert, issuer_cert, p);
    if (X509_sign(cert, signing_key, EVP_sha256()) <= 0) fail("signing " + p.common_name);
    return out;
}

bio_ptr open_for_writing(const std::string& path) {
    bio_ptr bio(BIO_new_file(path.c_str(), "w"));
    if (!bio) fail("open " + path);
    return bio;
}

void write_cert(const std::string& path, X509* cert) {
    const bio_ptr bio = open_for_writing(path);
    if (PEM_write_bio_X509(bio.get(), cert) != 1) fail("write " + path);
}

void write_key(const std::string& path, EVP_PKEY* key) {
    const bio_ptr bio = open_for_writing(path);
    if (PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
        fail("write " + path);
    }
}

profile authority(const std::string& name) {
    profile p;
    p.common_name = name;
    p.authority = true;
    return p;
}

profile server(const std::string& name, const std::string& alt_names) {
    profile p;
    p.common_name = name;
    p.alt_names = alt_names;
    p.extended_usage = "serverAuth,clientAuth";
    return p;
}

profile client(const std::string& name) {
    profile p;
    p.common_name = name;
    p.extended_usage = "clientAuth";
    return p;
}

}  // namespace

tls_material::tls_material() : dir_(detail::make_temp_dir("tls")) {
    try {
        generate();
    } catch (...) {
        detail::remove_dir(dir_);
        throw;
    }
}

tls_material::~tls_material() { detail::remove_dir(dir_); }

void tls_material::generate() {
    long serial = 1;
    const issued ca = issue(authority("edgelock test CA"), nullptr, serial++);
    write_cert(ca_file(), ca.cert.get());

    const issued other_ca = issue(authority("edgelock other test CA"), nullptr, serial++);
    write_cert(other_ca_file(), other_ca.cert.get());

    const issued valid = issue(server("edgelock test server", server_alt_names), &ca, serial++);
    write_cert(server_cert(), valid.cert.get());
    write_key(server_key(), valid.key.get());

    const issued user = issue(client("edgelock test client"), &ca, serial++);
    write_cert(client_cert(), user.cert.get());
    write_key(client_key(), user.key.get());

    profile past = server("edgelock expired server", server_alt_names);
    past.not_before_s = -10 * day_s;
    past.not_after_s = -9 * day_s;
    const issued expired = issue(past, &ca, serial++);
    write_cert(expired_cert(), expired.cert.get());
    write_key(expired_key(), expired.key.get());

    const issued elsewhere =
        issue(server("edgelock wrong-name server", "DNS:other.invalid"), &ca, serial++);
    write_cert(wrong_name_cert(), elsewhere.cert.get());
    write_key(wrong_name_key(), elsewhere.key.get());
}

}  // namespace edgelock::testing

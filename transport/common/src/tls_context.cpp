// SPDX-License-Identifier: Apache-2.0
#include "edgelock/tls_context.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace edgelock {
namespace {

bool is_ip_address(const std::string& host) {
    unsigned char bytes[sizeof(in6_addr)];
    return ::inet_pton(AF_INET, host.c_str(), bytes) == 1 ||
           ::inet_pton(AF_INET6, host.c_str(), bytes) == 1;
}

// OpenSSL's reason for the oldest error queued, on one line ("no start line (PEM routines)"):
// the first is the most specific (the PEM parser's, before the SSL layer's "PEM lib").
std::string openssl_reason() {
    const unsigned long first = ERR_peek_error();
    if (first == 0) return "not loaded";
    const char* reason = ERR_reason_error_string(first);
    const char* library = ERR_lib_error_string(first);
    if (reason == nullptr) {
        char text[256];
        ERR_error_string_n(first, text, sizeof text);
        return text;
    }
    return library != nullptr ? std::string(reason) + " (" + library + ")" : std::string(reason);
}

bool refuse(tls_load_error& error, tls_file file, const std::string& path, std::string reason) {
    error = {file, path, std::move(reason)};
    return false;
}

// OpenSSL takes any path as a directory and looks in it only when verifying: checked here.
bool check_directory(const std::string& path, tls_load_error& error) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
        return refuse(error, tls_file::ca_dir, path, std::strerror(errno));
    }
    if (!S_ISDIR(info.st_mode)) return refuse(error, tls_file::ca_dir, path, "not a directory");
    return true;
}

// The file and the directory are loaded one at a time, so a failure names the one refused.
bool load_trust(SSL_CTX* context, const tls_options& options, tls_load_error& error) {
    if (options.ca_file.empty() && options.ca_dir.empty()) {
        if (SSL_CTX_set_default_verify_paths(context) == 1) return true;
        return refuse(error, tls_file::ca_dir, "(the system's store)", openssl_reason());
    }
    if (!options.ca_file.empty() &&
        SSL_CTX_load_verify_locations(context, options.ca_file.c_str(), nullptr) != 1) {
        return refuse(error, tls_file::ca_file, options.ca_file, openssl_reason());
    }
    if (options.ca_dir.empty()) return true;
    if (!check_directory(options.ca_dir, error)) return false;
    if (SSL_CTX_load_verify_locations(context, nullptr, options.ca_dir.c_str()) == 1) return true;
    return refuse(error, tls_file::ca_dir, options.ca_dir, openssl_reason());
}

bool load_identity(SSL_CTX* context, const tls_options& options, tls_load_error& error) {
    const std::string& cert = options.cert_file;
    const std::string& key = options.key_file;
    if (cert.empty() && key.empty()) return true;
    if (cert.empty()) {
        return refuse(error, tls_file::key_file, key, "a key without its certificate");
    }
    if (key.empty()) {
        return refuse(error, tls_file::cert_file, cert, "a certificate without its key");
    }
    if (SSL_CTX_use_certificate_chain_file(context, cert.c_str()) != 1) {
        return refuse(error, tls_file::cert_file, cert, openssl_reason());
    }
    if (SSL_CTX_use_PrivateKey_file(context, key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(context) != 1) {
        return refuse(error, tls_file::key_file, key, openssl_reason());
    }
    return true;
}

// The verification result of a handshake that failed on the server's certificate.
transport_errc certificate_failure(long verify_result) noexcept {
    switch (verify_result) {
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH: return transport_errc::tls_name_mismatch;
        case X509_V_ERR_CERT_HAS_EXPIRED:
        case X509_V_ERR_CERT_NOT_YET_VALID: return transport_errc::tls_expired;
        default: return transport_errc::tls_untrusted;  // no chain to a trusted CA, or a bad one
    }
}

}  // namespace

tls_context::~tls_context() { SSL_CTX_free(context_); }

std::error_code tls_context::load(const tls_options& options) {
    SSL_CTX_free(context_);
    context_ = nullptr;
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    if (context == nullptr) return make_error_code(transport_errc::out_of_memory);
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    // A TLS 1.2 server's renegotiation would make a write wait for a read: refused.
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION);
    verify_ = !options.insecure_skip_verification_for_tests_only;
    SSL_CTX_set_verify(context, verify_ ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    error_ = tls_load_error{};
    const bool loaded = (!verify_ || load_trust(context, options, error_)) &&
                        load_identity(context, options, error_);
    ERR_clear_error();  // what went wrong is in error_; nothing is left for later calls
    if (!loaded) {
        SSL_CTX_free(context);
        return make_error_code(transport_errc::tls_files);
    }
    context_ = context;
    server_name_ = options.server_name;
    return {};
}

ssl_st* tls_context::new_connection(std::string_view host) const {
    if (context_ == nullptr) return nullptr;
    SSL* ssl = SSL_new(context_);
    if (ssl == nullptr) return nullptr;
    std::string name = server_name_.empty() ? std::string(host) : server_name_;
    // "host." is the same DNS name; SNI must not carry the dot, nor does the certificate.
    if (name.size() > 1 && name.back() == '.') name.pop_back();
    const bool ip = is_ip_address(name);
    bool prepared = ip || SSL_set_tlsext_host_name(ssl, name.c_str()) == 1;
    if (prepared && verify_) {
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        prepared = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) == 1
                      : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size()) == 1;
    }
    ERR_clear_error();
    if (prepared) return ssl;
    SSL_free(ssl);
    return nullptr;
}

int tls_context::handshake_step(ssl_st* connection) const {
    const std::lock_guard<std::mutex> turn(handshakes_);
    return SSL_connect(connection);
}

const char* describe(tls_file file) noexcept {
    switch (file) {
        case tls_file::none: return "";
        case tls_file::ca_file: return "CA file";
        case tls_file::ca_dir: return "CA directory";
        case tls_file::cert_file: return "certificate";
        case tls_file::key_file: return "key";
    }
    return "";
}

std::string describe(const tls_load_error& error) {
    if (error.file == tls_file::none) return "";
    return std::string("TLS ") + describe(error.file) + " " + error.path + ": " + error.reason;
}

std::error_code load_for(tls_context& context, const tls_options& options,
                         const session::node_address* addresses, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
        if (addresses[i].tls) return context.load(options);
    }
    return {};
}

failure tls_failure(long verify_result, unsigned long openssl_error) noexcept {
    if (ERR_GET_LIB(openssl_error) != ERR_LIB_SSL)
        return failure::of(transport_errc::tls_handshake_failed);
    switch (ERR_GET_REASON(openssl_error)) {
        // OpenSSL 3 reports a peer that closed without close_notify as an error.
        case SSL_R_UNEXPECTED_EOF_WHILE_READING:
            return failure::of(transport_errc::connection_closed);
        case SSL_R_CERTIFICATE_VERIFY_FAILED:
            return failure::of(certificate_failure(verify_result));
        // A server that does not speak TLS answers the ClientHello with something that is not
        // a TLS record (Redis: an -ERR line), or with an HTTP-looking one.
        case SSL_R_WRONG_VERSION_NUMBER:
        case SSL_R_PACKET_LENGTH_TOO_LONG:
        case SSL_R_RECORD_LENGTH_MISMATCH:
        case SSL_R_HTTP_REQUEST:
        case SSL_R_HTTPS_PROXY_REQUEST: return failure::of(transport_errc::tls_not_offered);
        // TLS 1.3 servers send certificate_required when the client sent none; a server that
        // does not trust the client's certificate sends one of the others.
        case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
        case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
        case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
        case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
        case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
        case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
            return failure::of(transport_errc::tls_client_certificate_required);
        default: return failure::of(transport_errc::tls_handshake_failed);
    }
}

}  // namespace edgelock

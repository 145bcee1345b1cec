// SPDX-License-Identifier: Apache-2.0
// edgelock: what a client verifies, and shows, when it speaks TLS (rediss:// URLs).
//
// Both clients and the CLI take the same options; they apply to every rediss:// address of
// the client: its instances, its sentinels, and the masters those sentinels name. Files are
// read once, at open(); a file that cannot be loaded fails open() with
// transport_errc::tls_files, and the client's tls_error() then says which file and why
// (tls_load_error below: a std::error_code has no room for a path).
//
// What is verified, by default, on every TLS connection: the server's certificate chain
// leads to a trusted CA (ca_file and ca_dir, or the system's store when both are empty); the
// certificate is within its validity period; and it names the host of the URL (or
// server_name): a DNS name against its subjectAltName DNS entries, an IP address against its
// IP entries. TLS 1.2 is the oldest version offered.
#pragma once

#include <cstdint>
#include <string>

namespace edgelock {

struct tls_options {
    // Trusted CA certificates, PEM: a file and/or a directory hashed as c_rehash(1) leaves
    // it. Both empty: the system's store (Debian: /etc/ssl/certs, ca-certificates).
    std::string ca_file;
    std::string ca_dir;
    // Mutual TLS (Redis's tls-auth-clients): the client's certificate chain and its private
    // key, PEM, both or neither.
    std::string cert_file;
    std::string key_file;
    // The name the server's certificate must carry, also sent as SNI. Empty: the URL's host
    // (for a master a sentinel named: the address the sentinel gave). Set it when the servers
    // are reached by IP address but their certificates carry DNS names.
    std::string server_name;
    // FOR TESTS ONLY. true: any certificate is accepted, from anyone; the connection is
    // encrypted but not authenticated, so anyone on the path can read and change every lock
    // operation. Never set it in production.
    bool insecure_skip_verification_for_tests_only = false;
};

// The field of tls_options whose file a failed load was reading.
enum class tls_file : std::uint8_t { none, ca_file, ca_dir, cert_file, key_file };

// Why loading tls_options failed (transport_errc::tls_files): the file, its path as given, and
// the reason on one line: OpenSSL's ("no start line (PEM routines)", "key values mismatch
// (x509 certificate routines)") or the system's ("not a directory"). Empty (file none) after
// a load that succeeded, or failed for want of memory.
struct tls_load_error {
    tls_file file = tls_file::none;
    std::string path;
    std::string reason;
};

// "CA file", "CA directory", "certificate", "key"; "" for none.
const char* describe(tls_file file) noexcept;
// One line: "TLS key /etc/edgelock/client.key: key values mismatch (x509 certificate
// routines)"; the path as given (a caller that shows untrusted paths quotes them itself).
std::string describe(const tls_load_error& error);

}  // namespace edgelock

// edgelock: what a client verifies, and shows, when it speaks TLS (rediss:// URLs).
//
// Both clients and the CLI take the same options; they apply to every rediss:// address of
// the client: its instances, its sentinels, and the masters those sentinels name. Files are
// read once, at open(); a file that cannot be loaded fails open() with
// transport_errc::tls_files.
//
// What is verified, by default, on every TLS connection: the server's certificate chain
// leads to a trusted CA (ca_file and ca_dir, or the system's store when both are empty); the
// certificate is within its validity period; and it names the host of the URL (or
// server_name): a DNS name against its subjectAltName DNS entries, an IP address against its
// IP entries. TLS 1.2 is the oldest version offered.
#pragma once

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

}  // namespace edgelock

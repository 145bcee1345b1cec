// SPDX-License-Identifier: Apache-2.0
// edgelock test support: certificates and keys for TLS tests, made fresh for each object.
//
// The constructor generates, with OpenSSL, a test CA and the certificates the tests need, and
// writes them as PEM files into a temporary directory of its own (removed with the object).
// Every key is EC P-256 and unencrypted; every certificate is X.509 v3 signed with SHA-256.
//
//   ca_file()           the CA "edgelock test CA" (self-signed, CA:TRUE, keyCertSign); trust it
//   server_cert/key()   signed by the CA for IP:127.0.0.1, IP:::1, DNS:localhost, valid from an
//                       hour ago for a day; serverAuth and clientAuth, so a redis-server can
//                       also present it to the TLS servers it connects to (replication,
//                       sentinels)
//   client_cert/key()   signed by the CA, CN "edgelock test client", clientAuth
//   other_ca_file()     a second CA that signed nothing: a client trusting only it sees an
//                       unknown CA
//   expired_cert/key()  as the server's, but valid only from 10 days ago to 9 days ago
//   wrong_name_cert/key() as the server's, but for DNS:other.invalid only
//
// Throws std::runtime_error (one line, with OpenSSL's reason) when anything fails.
#pragma once

#include <string>

namespace edgelock::testing {

class tls_material {
public:
    tls_material();
    ~tls_material();
    tls_material(const tls_material&) = delete;
    tls_material& operator=(const tls_material&) = delete;

    const std::string& dir() const noexcept { return dir_; }

    std::string ca_file() const { return file("ca.crt"); }
    std::string server_cert() const { return file("server.crt"); }
    std::string server_key() const { return file("server.key"); }
    std::string client_cert() const { return file("client.crt"); }
    std::string client_key() const { return file("client.key"); }
    std::string other_ca_file() const { return file("other-ca.crt"); }
    std::string expired_cert() const { return file("expired.crt"); }
    std::string expired_key() const { return file("expired.key"); }
    std::string wrong_name_cert() const { return file("wrong-name.crt"); }
    std::string wrong_name_key() const { return file("wrong-name.key"); }

private:
    std::string file(const char* name) const { return dir_ + "/" + name; }
    void generate();

    std::string dir_;
};

}  // namespace edgelock::testing

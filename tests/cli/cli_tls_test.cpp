// SPDX-License-Identifier: Apache-2.0
// `edgelock run`, `status`, `release` and `check` over TLS (rediss://) against real TLS-only
// redis-server and redis-sentinel processes (tests/support, certificates made per test): the
// lock over TLS, the --tls-* flags and their EDGELOCK_TLS_* variables, and every refusal as
// one line with its exit code (77 TLS refused, 64 a TLS file or flag that cannot be used),
// each within its bound.
#include <gtest/gtest.h>

#include <openssl/pem.h>
#include <openssl/x509.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "edgelock/testing/redis_client.hpp"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/tcp_proxy.hpp"
#include "edgelock/testing/tls_material.hpp"
#include "program_run.hpp"

namespace {

using namespace std::chrono_literals;
using edgelock::cli_tests::program;
using edgelock::cli_tests::program_options;
using edgelock::cli_tests::program_result;
using edgelock::cli_tests::run_program;
using edgelock::testing::client_tls;
using edgelock::testing::eventually;
using edgelock::testing::redis_client;
using edgelock::testing::redis_server;
using edgelock::testing::sentinel_topology;
using edgelock::testing::tcp_proxy;
using edgelock::testing::tls_material;
using edgelock::testing::tls_setup;

// Every refusal below comes within the default --redis-timeout (2s) per attempt; this is
// far above it and far below the program's own kill timeout.
constexpr auto refusal_bound = 8s;

// No EDGELOCK_* from the caller's shell, and OpenSSL's default store as the system has it (an
// SSL_CERT_FILE or SSL_CERT_DIR pointing at a test CA would make "untrusted" trusted).
program_options clean_env(std::vector<std::string> set = {}) {
    program_options o;
    o.env = {"EDGELOCK_REDIS",    "EDGELOCK_SENTINEL", "EDGELOCK_MASTER",
             "EDGELOCK_FENCE",    "EDGELOCK_TLS_CA",   "EDGELOCK_TLS_CA_DIR",
             "EDGELOCK_TLS_CERT", "EDGELOCK_TLS_KEY",  "EDGELOCK_TLS_SERVER_NAME",
             "SSL_CERT_FILE",     "SSL_CERT_DIR"};
    o.env.insert(o.env.end(), set.begin(), set.end());
    o.timeout = 30s;
    return o;
}

std::vector<std::string> edgelock(std::vector<std::string> args) {
    args.insert(args.begin(), EDGELOCK_CLI);
    return args;
}

void expect_one_line_failure(const program_result& r, int code, const std::string& fragment) {
    EXPECT_FALSE(r.timed_out) << r.err;
    EXPECT_EQ(r.exit_code, code) << r.err;
    ASSERT_EQ(r.err_lines().size(), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("edgelock: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << "CMD must not run, nothing on stdout: " << r.out;
}

void expect_success(const program_result& r) {
    EXPECT_FALSE(r.timed_out) << r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
}

// The first line of `out` that starts with `prefix`, "" when none does.
std::string line_starting(const std::string& out, const std::string& prefix) {
    std::size_t start = 0;
    while (start < out.size()) {
        const std::size_t end = std::min(out.find('\n', start), out.size());
        if (out.compare(start, prefix.size(), prefix) == 0) return out.substr(start, end - start);
        start = end + 1;
    }
    return "";
}

// A directory (inside the material's) holding its CA under the CA's subject hash, as
// c_rehash(1) leaves it: <8 hex digits>.0.
std::string hashed_ca_dir(const tls_material& material) {
    std::FILE* in = std::fopen(material.ca_file().c_str(), "r");
    if (in == nullptr) throw std::runtime_error("cannot open " + material.ca_file());
    X509* ca = PEM_read_X509(in, nullptr, nullptr, nullptr);
    std::fclose(in);
    if (ca == nullptr) throw std::runtime_error("cannot parse " + material.ca_file());
    char name[16];
    std::snprintf(name, sizeof name, "%08lx.0", X509_subject_name_hash(ca));
    X509_free(ca);
    const std::filesystem::path dir = std::filesystem::path(material.dir()) / "hashed";
    std::filesystem::create_directory(dir);
    std::filesystem::copy_file(material.ca_file(), dir / name,
                               std::filesystem::copy_options::overwrite_existing);
    return dir.string();
}

class CliTls : public ::testing::Test {
protected:
    // An admin client that trusts the test CA and presents the client certificate.
    redis_client admin_of(const redis_server& s) {
        return redis_client(s.port(), client_tls::with_client_cert(material));
    }

    // `edgelock run --redis URL [flags] -- echo ran` against `s`.
    std::vector<std::string> run_echo(const redis_server& s, std::vector<std::string> flags) {
        std::vector<std::string> args = {"run", "--name", "t", "--wait", "0", "--redis", s.url()};
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), {"--", "echo", "ran"});
        return edgelock(args);
    }

    tls_material material;
};

TEST_F(CliTls, RunHoldsTheLockOverTlsPassesTheFenceAndReleases) {
    redis_server server(material);
    ASSERT_EQ(server.url().rfind("rediss://", 0), 0u);
    redis_client admin = admin_of(server);

    const program_result r =
        run_program(edgelock({"run", "--redis", server.url(), "--tls-ca", material.ca_file(),
                              "--name", "n", "--", "sh", "-c", "echo $EDGELOCK_FENCE"}),
                    clean_env());
    expect_success(r);
    ASSERT_FALSE(r.out.empty());
    EXPECT_EQ(r.out.back(), '\n');
    const std::string fence = r.out.substr(0, r.out.size() - 1);
    EXPECT_GT(std::stoll("0" + fence), 0) << r.out;
    EXPECT_EQ(admin.get("{n}:fence"), fence) << "the fence counter the run left in the TLS server";
    EXPECT_FALSE(admin.exists("n")) << "released over TLS after CMD";

    const program_result second =
        run_program(edgelock({"run", "--redis", server.url(), "--tls-ca", material.ca_file(),
                              "--name", "n", "--", "sh", "-c", "echo $EDGELOCK_FENCE"}),
                    clean_env());
    expect_success(second);
    EXPECT_GT(std::stoll("0" + second.out), std::stoll("0" + fence)) << second.out;
}

// status and release with the server and the CA only in the environment, while an
// `edgelock run` (its CA in a flag) holds the lock; a flag wins over its variable.
TEST_F(CliTls, StatusAndReleaseTakeTheCaFromTheEnvironmentAndFlagsWin) {
    redis_server server(material);
    redis_client admin = admin_of(server);
    const std::vector<std::string> from_env = {"EDGELOCK_REDIS=" + server.url(),
                                               "EDGELOCK_TLS_CA=" + material.ca_file()};

    program holder(edgelock({"run", "--redis", server.url(), "--tls-ca", material.ca_file(),
                             "--name", "held", "--ttl", "3s", "--", "sh", "-c",
                             "trap 'echo got TERM; exit 3' TERM; while :; do sleep 0.05; done"}),
                   clean_env());
    ASSERT_TRUE(eventually([&] { return admin.exists("held"); }, 10s))
        << "the holder never took the lock";
    const std::string token = admin.get("held");

    program_result status =
        run_program(edgelock({"status", "--name", "held"}), clean_env(from_env));
    EXPECT_EQ(status.exit_code, 0) << status.err;
    EXPECT_EQ(status.err, "");
    EXPECT_NE(status.out.find("instance 127.0.0.1:" + std::to_string(server.port()) + "\n"),
              std::string::npos)
        << status.out;
    EXPECT_NE(status.out.find("holder   " + token + "\n"), std::string::npos) << status.out;
    EXPECT_NE(status.out.find("fence    " + admin.get("{held}:fence") + "\n"), std::string::npos)
        << status.out;
    EXPECT_NE(status.out.find("\nheld\n"), std::string::npos) << status.out;

    // The wrong CA in the environment is refused; the right one in a flag wins over it.
    const std::vector<std::string> wrong_env = {"EDGELOCK_REDIS=" + server.url(),
                                                "EDGELOCK_TLS_CA=" + material.other_ca_file()};
    const program_result refused =
        run_program(edgelock({"status", "--name", "held"}), clean_env(wrong_env));
    expect_one_line_failure(refused, 77, "not signed by a trusted CA");
    EXPECT_EQ(refused.err.rfind("edgelock: cannot read lock \"held\": 127.0.0.1:", 0), 0u)
        << refused.err;
    status = run_program(edgelock({"status", "--name", "held", "--tls-ca", material.ca_file()}),
                         clean_env(wrong_env));
    EXPECT_EQ(status.exit_code, 0) << status.err;
    EXPECT_NE(status.out.find("holder   " + token + "\n"), std::string::npos) << status.out;

    const program_result release =
        run_program(edgelock({"release", "--name", "held", "--token", token}), clean_env(from_env));
    EXPECT_EQ(release.exit_code, 0) << release.err;
    EXPECT_NE(release.out.find("released lock \"held\""), std::string::npos) << release.out;
    EXPECT_FALSE(admin.exists("held"));

    const program_result r = holder.wait();
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 80) << "the holder learns of the release at its next renewal, over TLS: "
                               << r.err;
    EXPECT_EQ(r.out, "got TERM\n");
}

// A 1s lease kept for a CMD of 2.5s: the watchdog renews over the TLS connection.
TEST_F(CliTls, RenewalsKeepAShortLeaseOverTls) {
    redis_server server(material);
    redis_client admin = admin_of(server);
    program run(edgelock({"run", "--redis", server.url(), "--tls-ca", material.ca_file(), "--name",
                          "short", "--ttl", "1s", "--", "sh", "-c", "sleep 2.5; echo done"}),
                clean_env());
    ASSERT_TRUE(eventually([&] { return admin.exists("short"); }, 10s))
        << "the run never took the lock";
    const std::string token = admin.get("short");
    std::this_thread::sleep_for(1700ms);  // beyond the first lease
    EXPECT_EQ(admin.get("short"), token) << "still ours after the first lease ran out: renewed";
    const long long pttl = admin.pttl("short");
    EXPECT_GT(pttl, 0);
    EXPECT_LE(pttl, 1000);

    const program_result r = run.wait();
    expect_success(r);
    EXPECT_EQ(r.out, "done\n");
    EXPECT_FALSE(admin.exists("short"));
}

TEST_F(CliTls, AServerCertificateFromAnotherCaIsRefused) {
    redis_server server(material);
    const program_result r =
        run_program(run_echo(server, {"--tls-ca", material.other_ca_file()}), clean_env());
    expect_one_line_failure(r, 77, "TLS: the server's certificate is not signed by a trusted CA");
    EXPECT_EQ(r.err.rfind("edgelock: cannot acquire lock \"t\": 127.0.0.1:" +
                              std::to_string(server.port()) + ": ",
                          0),
              0u)
        << r.err;
    EXPECT_LT(r.elapsed, refusal_bound);

    // Without --tls-ca the system's store is used, and it does not know the test CA.
    const program_result system_store = run_program(run_echo(server, {}), clean_env());
    expect_one_line_failure(system_store, 77, "not signed by a trusted CA");
    EXPECT_LT(system_store.elapsed, refusal_bound);

    EXPECT_FALSE(admin_of(server).exists("t"));
}

// A directory of PEM files without the hash links OpenSSL looks CAs up by loads without a word
// and trusts nothing: the refusal says how to hash it, for run and status alike.
TEST_F(CliTls, AnUnhashedCaDirectoryIsRefusedWithHowToHashIt) {
    redis_server server(material);
    const std::filesystem::path dir = std::filesystem::path(material.dir()) / "unhashed";
    std::filesystem::create_directory(dir);
    std::filesystem::copy_file(material.ca_file(), dir / "ca.crt",
                               std::filesystem::copy_options::overwrite_existing);
    const std::string hint =
        "(is " + dir.string() + " hashed? run: openssl rehash " + dir.string() + ")";

    program_result r = run_program(run_echo(server, {"--tls-ca-dir", dir.string()}), clean_env());
    expect_one_line_failure(r, 77,
                            "TLS: the server's certificate is not signed by a trusted CA " + hint);
    r = run_program(
        edgelock({"status", "--name", "t", "--redis", server.url(), "--tls-ca-dir", dir.string()}),
        clean_env());
    expect_one_line_failure(r, 77, hint);

    r = run_program(run_echo(server, {"--tls-ca", material.other_ca_file()}), clean_env());
    expect_one_line_failure(r, 77, "not signed by a trusted CA");
    EXPECT_EQ(r.err.find("rehash"), std::string::npos) << "no directory, no hint: " << r.err;
}

// --tls-ca-dir: a directory hashed as c_rehash(1) leaves it, from the flag or the variable;
// the CA's file in a directory without its hash link is not found there.
TEST_F(CliTls, ACaDirectoryHashedAsCRehashLeavesItIsTrusted) {
    redis_server server(material);
    const std::string dir = hashed_ca_dir(material);

    program_result r = run_program(run_echo(server, {"--tls-ca-dir", dir}), clean_env());
    expect_success(r);
    EXPECT_EQ(r.out, "ran\n");
    r = run_program(run_echo(server, {}), clean_env({"EDGELOCK_TLS_CA_DIR=" + dir}));
    expect_success(r);
    EXPECT_EQ(r.out, "ran\n");

    r = run_program(run_echo(server, {"--tls-ca-dir", material.dir()}), clean_env());
    expect_one_line_failure(r, 77, "TLS: the server's certificate is not signed by a trusted CA");
}

TEST_F(CliTls, ACertificateForAnotherNameIsRefusedUnlessThatNameIsGiven) {
    tls_setup setup(material);
    setup.presents = tls_setup::certificate::wrong_name;
    redis_server server(setup);
    const program_result r =
        run_program(run_echo(server, {"--tls-ca", material.ca_file()}), clean_env());
    expect_one_line_failure(r, 77, "TLS: the server's certificate does not name this host");
    EXPECT_LT(r.elapsed, refusal_bound);

    // The certificate names other.invalid: with that name to verify, it is accepted.
    program_result named = run_program(
        run_echo(server, {"--tls-ca", material.ca_file(), "--tls-server-name", "other.invalid"}),
        clean_env());
    expect_success(named);
    EXPECT_EQ(named.out, "ran\n");
    named =
        run_program(run_echo(server, {}), clean_env({"EDGELOCK_TLS_CA=" + material.ca_file(),
                                                     "EDGELOCK_TLS_SERVER_NAME=other.invalid"}));
    expect_success(named);
    EXPECT_EQ(named.out, "ran\n");
}

TEST_F(CliTls, AnExpiredServerCertificateIsRefused) {
    tls_setup setup(material);
    setup.presents = tls_setup::certificate::expired;
    redis_server server(setup);
    const program_result r =
        run_program(run_echo(server, {"--tls-ca", material.ca_file()}), clean_env());
    expect_one_line_failure(r, 77, "TLS: the server's certificate has expired or is not yet valid");
    EXPECT_LT(r.elapsed, refusal_bound);
}

TEST_F(CliTls, AServerThatRequiresAClientCertificateGetsOneOnlyWhenGiven) {
    tls_setup setup(material);
    setup.require_client_cert = true;
    redis_server server(setup);

    const program_result refused =
        run_program(run_echo(server, {"--tls-ca", material.ca_file()}), clean_env());
    expect_one_line_failure(refused, 77,
                            "TLS: the server requires a client certificate it accepts");
    EXPECT_LT(refused.elapsed, refusal_bound);

    program_result r =
        run_program(run_echo(server, {"--tls-ca", material.ca_file(), "--tls-cert",
                                      material.client_cert(), "--tls-key", material.client_key()}),
                    clean_env());
    expect_success(r);
    EXPECT_EQ(r.out, "ran\n");

    r = run_program(run_echo(server, {}), clean_env({"EDGELOCK_TLS_CA=" + material.ca_file(),
                                                     "EDGELOCK_TLS_CERT=" + material.client_cert(),
                                                     "EDGELOCK_TLS_KEY=" + material.client_key()}));
    expect_success(r);
    EXPECT_EQ(r.out, "ran\n");

    // A certificate without its key is a usage error, before any connection.
    const program_result half = run_program(
        run_echo(server, {"--tls-ca", material.ca_file(), "--tls-cert", material.client_cert()}),
        clean_env());
    expect_one_line_failure(half, 64, "--tls-cert and --tls-key go together");
}

// The ClientHello reaches a plain Redis, which waits for the rest of an inline command: the
// handshake ends at --redis-timeout.
TEST_F(CliTls, RedissAgainstAPlainPortEndsAtTheRedisTimeout) {
    redis_server plain;
    const std::string url = "rediss://127.0.0.1:" + std::to_string(plain.port());
    const program_result r =
        run_program(edgelock({"run", "--name", "t", "--wait", "0", "--redis-timeout", "500ms",
                              "--redis", url, "--tls-ca", material.ca_file(), "--", "echo", "ran"}),
                    clean_env());
    expect_one_line_failure(r, 69, "TLS: no handshake within the connect timeout");
    EXPECT_GE(r.elapsed, 450ms);
    EXPECT_LT(r.elapsed, 3s) << "bounded by --redis-timeout 500ms";
}

// A plain server that answers the ClientHello with a plain error, as Redis does when the
// hello's random bytes hold a newline (an inline command ends there): TLS on one side only,
// the same outage as a plain port that stays silent (69), not a certificate refusal (77).
TEST_F(CliTls, RedissAgainstAPlainServerThatAnswersIsAnOutageToo) {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(listener, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::listen(listener, 8), 0);
    socklen_t size = sizeof address;
    ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size), 0);
    // Answers every connection the way Redis answers a line it cannot parse.
    std::thread server([listener] {
        for (int served = 0; served < 2; ++served) {
            const int fd = ::accept(listener, nullptr, nullptr);
            if (fd < 0) return;
            char hello[512];
            if (::read(fd, hello, sizeof hello) > 0) {
                const char reply[] = "-ERR unknown command\r\n";
                (void)!::write(fd, reply, sizeof reply - 1);
            }
            ::close(fd);
        }
    });
    const std::string url = "rediss://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    const program_result r = run_program(
        edgelock({"status", "--name", "t", "--redis", url, "--tls-ca", material.ca_file()}),
        clean_env());
    ::shutdown(listener, SHUT_RDWR);
    ::close(listener);
    server.join();
    expect_one_line_failure(r, 69, "TLS: the server did not answer in TLS (a plain port?)");
}

// A plain client's first command to a TLS port is no TLS record: Redis closes without a word.
TEST_F(CliTls, RedisAgainstATlsPortIsNamed) {
    redis_server server(material);
    const std::string url = "redis://127.0.0.1:" + std::to_string(server.port());
    const program_result r = run_program(
        edgelock({"run", "--name", "t", "--wait", "0", "--redis", url, "--", "echo", "ran"}),
        clean_env());
    expect_one_line_failure(
        r, 69,
        "the server closed the connection before its first reply (a TLS port? use rediss://)");
    EXPECT_LT(r.elapsed, refusal_bound);

    const program_result status =
        run_program(edgelock({"status", "--name", "t", "--redis", url}), clean_env());
    expect_one_line_failure(status, 69, "the server closed the connection before its first reply");
}

// A reset in the middle of the TLS handshake (the fault proxy passes 100 bytes of the
// server's answer, then resets): the socket's error, exit 69, one line; then, the network
// healed, the same command takes the lock.
TEST_F(CliTls, AResetInTheMiddleOfTheHandshakeIsAnOutage) {
    redis_server server(material);
    tcp_proxy proxy(server.port());
    proxy.reset_after(100);
    const std::string url = "rediss://127.0.0.1:" + std::to_string(proxy.port());
    const std::vector<std::string> args =
        edgelock({"run", "--name", "t", "--wait", "0", "--redis", url, "--tls-ca",
                  material.ca_file(), "--", "echo", "ran"});
    const program_result r = run_program(args, clean_env());
    expect_one_line_failure(r, 69, "onnection reset by peer");
    EXPECT_LT(r.elapsed, refusal_bound);
    proxy.pass();
    const program_result healed = run_program(args, clean_env());
    expect_success(healed);
    EXPECT_EQ(healed.out, "ran\n");
}

TEST_F(CliTls, TlsFilesThatCannotBeReadAndFlagsWithoutRedissAreUsageErrors) {
    redis_server server(material);
    const std::string missing = material.dir() + "/no-such-ca.crt";

    program_result r = run_program(run_echo(server, {"--tls-ca", missing}), clean_env());
    expect_one_line_failure(
        r, 64, "cannot use --tls-ca (EDGELOCK_TLS_CA) " + missing + ": No such file or directory");

    r = run_program(run_echo(server, {}), clean_env({"EDGELOCK_TLS_CA=" + missing}));
    expect_one_line_failure(r, 64, "cannot use --tls-ca (EDGELOCK_TLS_CA)");

    r = run_program(
        run_echo(server, {"--tls-ca", material.ca_file(), "--tls-cert",
                          material.dir() + "/no-such.crt", "--tls-key", material.client_key()}),
        clean_env());
    expect_one_line_failure(r, 64, "cannot use --tls-cert (EDGELOCK_TLS_CERT)");

    r = run_program(
        edgelock({"status", "--name", "t", "--redis", server.url(), "--tls-ca", missing}),
        clean_env());
    expect_one_line_failure(r, 64, "cannot use --tls-ca");

    r = run_program(run_echo(server, {"--tls-ca-dir", material.ca_file()}), clean_env());
    expect_one_line_failure(r, 64, "cannot use --tls-ca-dir (EDGELOCK_TLS_CA_DIR)");
    EXPECT_NE(r.err.find("not a directory"), std::string::npos) << r.err;

    // A file that can be read but holds no certificate, or a key of another certificate:
    // OpenSSL refuses it, and the message names the flag, the file and OpenSSL's reason.
    r = run_program(run_echo(server, {"--tls-ca", material.client_key()}), clean_env());
    expect_one_line_failure(
        r, 64, "cannot use --tls-ca (EDGELOCK_TLS_CA) " + material.client_key() + ": ");
    EXPECT_NE(r.err.find("certificate"), std::string::npos) << "OpenSSL's reason: " << r.err;
    r = run_program(run_echo(server, {"--tls-ca", material.ca_file(), "--tls-cert",
                                      material.client_cert(), "--tls-key", material.server_key()}),
                    clean_env());
    expect_one_line_failure(
        r, 64, "cannot use --tls-key (EDGELOCK_TLS_KEY) " + material.server_key() + ": ");
    EXPECT_NE(r.err.find("mismatch"), std::string::npos) << "OpenSSL's reason: " << r.err;
    r = run_program(edgelock({"status", "--name", "t", "--redis", server.url(), "--tls-ca",
                              material.client_key()}),
                    clean_env());
    expect_one_line_failure(
        r, 64, "cannot use --tls-ca (EDGELOCK_TLS_CA) " + material.client_key() + ": ");

    // --tls-* with only redis:// addresses would be ignored: refused instead.
    r = run_program(edgelock({"run", "--name", "t", "--redis",
                              "redis://127.0.0.1:" + std::to_string(server.port()), "--tls-ca",
                              material.ca_file(), "--", "echo", "ran"}),
                    clean_env());
    expect_one_line_failure(r, 64, "--tls-* flags apply to rediss:// addresses, and none is given");
    r = run_program(edgelock({"status", "--name", "t", "--tls-server-name", "localhost"}),
                    clean_env());
    expect_one_line_failure(r, 64, "--tls-* flags apply to rediss:// addresses");

    // A variable may be meant for another deployment: with redis:// it is left unused.
    redis_server plain;
    r = run_program(edgelock({"run", "--name", "t", "--redis", plain.url(), "--", "echo", "ran"}),
                    clean_env({"EDGELOCK_TLS_CA=" + missing}));
    expect_success(r);
    EXPECT_EQ(r.out, "ran\n");

    EXPECT_FALSE(admin_of(server).exists("t"));
}

// Three sentinels reached by rediss:// name a master that is reached by TLS too.
TEST_F(CliTls, SentinelsOverTlsNameAMasterReachedOverTls) {
    sentinel_topology topology(material);
    std::vector<std::string> where;
    for (const std::string& url : topology.sentinel_urls()) {
        ASSERT_EQ(url.rfind("rediss://", 0), 0u) << url;
        where.insert(where.end(), {"--sentinel", url});
    }
    where.insert(where.end(),
                 {"--master", sentinel_topology::master_name, "--tls-ca", material.ca_file()});

    std::vector<std::string> run_args = {"run", "--name", "sen"};
    run_args.insert(run_args.end(), where.begin(), where.end());
    run_args.insert(run_args.end(), {"--", "true"});
    program_result r = run_program(edgelock(run_args), clean_env());
    expect_success(r);

    run_args.erase(run_args.end() - 1);
    run_args.insert(run_args.end(), {"sh", "-c", "echo $EDGELOCK_FENCE"});
    r = run_program(edgelock(run_args), clean_env());
    expect_success(r);
    const std::string fence = r.out.substr(0, r.out.find('\n'));
    EXPECT_GT(std::stoll("0" + fence), 0) << r.out;

    redis_client master(topology.master_port(), client_tls::with_client_cert(material));
    EXPECT_EQ(master.get("{sen}:fence"), fence);
    EXPECT_FALSE(master.exists("sen"));

    std::vector<std::string> status_args = {"status", "--name", "sen"};
    status_args.insert(status_args.end(), where.begin(), where.end());
    const program_result status = run_program(edgelock(status_args), clean_env());
    EXPECT_EQ(status.exit_code, 1) << "free after the runs: " << status.err;
    EXPECT_NE(status.out.find("instance 127.0.0.1:" + std::to_string(topology.master_port())),
              std::string::npos)
        << status.out;
    EXPECT_NE(status.out.find("fence    " + fence + "\n"), std::string::npos) << status.out;

    // check finds the master through the same sentinels, over TLS.
    std::vector<std::string> check_args = {"check"};
    check_args.insert(check_args.end(), where.begin(), where.end());
    program_options checking = clean_env();
    checking.timeout = 120s;  // check simulates its row's matrix: slow under the sanitizers
    const program_result check = run_program(edgelock(check_args), checking);
    expect_success(check);
    EXPECT_EQ(line_starting(check.out, "node "),
              "node         127.0.0.1:" + std::to_string(topology.master_port()))
        << check.out;
    EXPECT_EQ(line_starting(check.out, "role "), "role         master");
    EXPECT_EQ(line_starting(check.out, "replication").substr(0, 26), "replication  1 replica(s),");

    // The sentinels' certificate is checked as any other: exit 77 with the TLS cause (not "no
    // sentinel named a master"), one line, and CMD never runs.
    std::vector<std::string> untrusted = {"run",
                                          "--name",
                                          "sen",
                                          "--wait",
                                          "0",
                                          "--master",
                                          sentinel_topology::master_name,
                                          "--tls-ca",
                                          material.other_ca_file()};
    for (const std::string& url : topology.sentinel_urls())
        untrusted.insert(untrusted.end(), {"--sentinel", url});
    untrusted.insert(untrusted.end(), {"--", "echo", "ran"});
    const program_result refused = run_program(edgelock(untrusted), clean_env());
    expect_one_line_failure(refused, 77, "not signed by a trusted CA");
    EXPECT_LT(refused.elapsed, refusal_bound);
}

// check reads a durable node over TLS (edgelock-sim is linked next to the binary in the
// build tree): the same facts and verdict as over plain TCP.
TEST_F(CliTls, CheckReadsADurableNodeOverTls) {
    redis_server server(material);  // AOF, appendfsync always
    const program_result r = run_program(
        edgelock({"check", "--redis", server.url(), "--tls-ca", material.ca_file()}), clean_env());
    expect_success(r);
    EXPECT_EQ(line_starting(r.out, "node "),
              "node         127.0.0.1:" + std::to_string(server.port()));
    EXPECT_EQ(line_starting(r.out, "role "), "role         master");
    EXPECT_EQ(line_starting(r.out, "version ").substr(0, 13), "version      ");
    EXPECT_EQ(line_starting(r.out, "persistence"), "persistence  AOF, appendfsync always");
    EXPECT_EQ(line_starting(r.out, "survives"), "survives     S2 S3 S5 S6 S8 S9 S11");
    EXPECT_EQ(line_starting(r.out, "verdict").substr(0, 25), "verdict      safe against");

    const program_result refused = run_program(
        edgelock({"check", "--redis", server.url(), "--tls-ca", material.other_ca_file()}),
        clean_env());
    // One line on stderr; the report on stdout names the node with its error.
    EXPECT_EQ(refused.exit_code, 77) << refused.err;
    EXPECT_EQ(refused.err_lines().size(), 1u) << refused.err;
    EXPECT_EQ(line_starting(refused.out, "error"),
              "error        TLS: the server's certificate is not signed by a trusted CA");
    EXPECT_EQ(
        refused.err.rfind("edgelock: cannot check 127.0.0.1:" + std::to_string(server.port()), 0),
        0u)
        << refused.err;
}

}  // namespace

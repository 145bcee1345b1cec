// SPDX-License-Identifier: Apache-2.0
// The C API's words for a failure, through edgelock.h as a C program calls it: a refused
// connection is told by the OS error's text (edgelock_strerror(EDGELOCK_E_OS) and
// edgelock_last_error_message()), on the thread that got it only; a bad URL by the part that
// is wrong, without its password; an unloadable TLS file by its path; a real redis-server's
// refusal by the code's own text.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <thread>

#include "edgelock.h"
#include "edgelock/testing/redis_process.hpp"
#include "edgelock/testing/refused_port.hpp"

namespace {

// An open lock on `url`, closed with the object.
class open_lock {
public:
    explicit open_lock(const std::string& url) : url_(url) {
        edgelock_options options;
        edgelock_options_init(&options, sizeof options);
        options.instances = urls_;
        options.instance_count = 1;
        options.name = "errors:test";
        opened = edgelock_open(&options, &lock);
    }
    ~open_lock() { edgelock_close(lock); }
    open_lock(const open_lock&) = delete;
    open_lock& operator=(const open_lock&) = delete;

    int opened = EDGELOCK_E_UNKNOWN;
    edgelock_lock* lock = nullptr;

private:
    std::string url_;
    const char* urls_[1] = {url_.c_str()};
};

// edgelock_open() with these URLs in one of the three lists; its code.
int open_with(const char* const* urls, std::size_t count, const char* list) {
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    const std::string which = list;
    if (which == "instances") options.instances = urls;
    if (which == "instances") options.instance_count = count;
    if (which == "sentinels") options.sentinels = urls;
    if (which == "sentinels") options.sentinel_count = count;
    if (which == "sentinels") options.master_name = "mymaster";
    if (which == "cluster") options.cluster = urls;
    if (which == "cluster") options.cluster_count = count;
    options.name = "errors:test";
    edgelock_lock* lock = nullptr;
    const int rc = edgelock_open(&options, &lock);
    edgelock_close(lock);
    return rc;
}

TEST(CapiErrorText, ARefusedConnectionIsTheOsText) {
    const edgelock::testing::refused_port nobody;
    open_lock opened(nobody.url());
    ASSERT_EQ(opened.opened, EDGELOCK_OK);
    const int rc = edgelock_try_acquire(opened.lock, nullptr);
    ASSERT_EQ(rc, EDGELOCK_E_OS);
    EXPECT_EQ(edgelock_last_os_error(), ECONNREFUSED);
    EXPECT_STREQ(edgelock_strerror(rc), "connection refused");
    EXPECT_STREQ(edgelock_last_error_message(), "connection refused");
}

// Another thread has its own errno, so its own text: none yet.
TEST(CapiErrorText, TheTextBelongsToTheThreadThatFailed) {
    const edgelock::testing::refused_port nobody;
    open_lock opened(nobody.url());
    ASSERT_EQ(edgelock_try_acquire(opened.lock, nullptr), EDGELOCK_E_OS);
    std::string elsewhere_message = "unset";
    std::string elsewhere_os_text = "unset";
    std::thread other([&] {
        elsewhere_message = edgelock_last_error_message();
        elsewhere_os_text = edgelock_strerror(EDGELOCK_E_OS);
    });
    other.join();
    EXPECT_EQ(elsewhere_message, "");
    EXPECT_EQ(elsewhere_os_text, "operating system error (see edgelock_last_os_error)");
    EXPECT_STREQ(edgelock_last_error_message(), "connection refused");
}

TEST(CapiErrorText, ABadUrlNamesWhichAndWhatIsWrong) {
    const char* const instances[] = {"redis://127.0.0.1:6379", "redis://u:secret@h:99999",
                                     "redis://127.0.0.1:6381"};
    EXPECT_EQ(open_with(instances, 3, "instances"), EDGELOCK_E_INVALID_CONFIG);
    EXPECT_STREQ(edgelock_last_error_message(),
                 "bad instances[1] address \"redis://***@h:99999\": bad port");
    const char* const sentinels[] = {"sentinel://127.0.0.1:26379"};
    EXPECT_EQ(open_with(sentinels, 1, "sentinels"), EDGELOCK_E_INVALID_CONFIG);
    EXPECT_STREQ(edgelock_last_error_message(),
                 "bad sentinels[0] address \"sentinel://127.0.0.1:26379\": unknown scheme "
                 "(expected redis:// or rediss://)");
    const char* const seeds[] = {"redis://127.0.0.1:7000/2"};
    EXPECT_EQ(open_with(seeds, 1, "cluster"), EDGELOCK_E_INVALID_CONFIG);
    EXPECT_STREQ(edgelock_last_error_message(),
                 "bad cluster[0] address \"redis://127.0.0.1:7000/2\": a cluster has only "
                 "database 0");
    // A quote or a newline in the URL keeps the message on one line, quoted.
    const char* const odd[] = {"redis://a\"b\nc:1"};
    EXPECT_EQ(open_with(odd, 1, "instances"), EDGELOCK_E_INVALID_CONFIG);
    EXPECT_STREQ(edgelock_last_error_message(),
                 "bad instances[0] address \"redis://a\\\"b?c:1\": bad byte in host");
}

// Whatever failed without more to say is told as the code is.
TEST(CapiErrorText, OtherFailuresAreTheCodesText) {
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    EXPECT_EQ(edgelock_open(&options, nullptr), EDGELOCK_E_INVALID_ARGUMENT);
    EXPECT_STREQ(edgelock_last_error_message(), "invalid argument (a NULL pointer)");
    const char* const two[] = {"redis://127.0.0.1:1", "redis://127.0.0.1:2"};
    EXPECT_EQ(open_with(two, 2, "instances"), EDGELOCK_E_INVALID_INSTANCES);
    EXPECT_STREQ(edgelock_last_error_message(), "invalid_instances");
}

TEST(CapiErrorText, AnUnloadableTlsFileIsNamed) {
    const edgelock::testing::refused_port nobody;
    const std::string url = "rediss://127.0.0.1:" + std::to_string(nobody.port());
    const char* const instances[] = {url.c_str()};
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    options.instances = instances;
    options.instance_count = 1;
    options.name = "errors:test";
    options.tls_ca_file = "/nonexistent/edgelock-ca.pem";
    edgelock_lock* lock = nullptr;
    EXPECT_EQ(edgelock_open(&options, &lock), EDGELOCK_E_TLS_FILES);
    EXPECT_EQ(lock, nullptr);
    const std::string message = edgelock_last_error_message();
    EXPECT_EQ(message.rfind("TLS CA file /nonexistent/edgelock-ca.pem: ", 0), 0u) << message;
}

// A real server's refusal has no more to say than its code; a success after it leaves the
// message alone, as errno.
TEST(CapiErrorText, ARealServersRefusalIsTheCodesText) {
    edgelock::testing::redis_server server({"--requirepass", "secret"});
    open_lock wrong(server.url("wrong"));
    ASSERT_EQ(wrong.opened, EDGELOCK_OK);
    const int rc = edgelock_try_acquire(wrong.lock, nullptr);
    ASSERT_EQ(rc, EDGELOCK_E_AUTH_FAILED);
    EXPECT_STREQ(edgelock_last_error_message(), edgelock_strerror(EDGELOCK_E_AUTH_FAILED));
    open_lock right(server.url("secret"));
    ASSERT_EQ(edgelock_try_acquire(right.lock, nullptr), EDGELOCK_OK);
    EXPECT_STREQ(edgelock_last_error_message(), edgelock_strerror(EDGELOCK_E_AUTH_FAILED));
    EXPECT_EQ(edgelock_release(right.lock), EDGELOCK_OK);
}

}  // namespace

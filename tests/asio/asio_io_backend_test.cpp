// SPDX-License-Identifier: Apache-2.0
// A kernel that refuses io_uring (a container's seccomp profile, kernel.io_uring_disabled):
// the io_uring build's open() says so with transport_errc::io_uring_refused and the process
// lives on (Asio, built without exceptions, would abort when it sets up its ring); the epoll
// build does not notice. The refusal is a seccomp filter this process installs on itself and
// cannot lift, so this test has a program of its own.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <string>

#include "asio_test_util.hpp"
#include "edgelock/async_client.hpp"

namespace {

using namespace edgelock::asio_tests;
using edgelock::transport_errc;
using edgelock::async::client;

// From here on, io_uring_setup fails with EPERM in this thread and the threads it starts, as
// under Docker's default profile. Every other system call is allowed.
bool refuse_io_uring_setup() {
    std::array<sock_filter, 4> program{{
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    }};
    const sock_fprog filter{static_cast<unsigned short>(program.size()), program.data()};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

TEST(asio_io_backend, a_kernel_that_refuses_io_uring_gets_an_error_not_an_abort) {
    ASSERT_TRUE(refuse_io_uring_setup());
    std::array<unsigned char, 120> params{};  // struct io_uring_params, zeroed
    errno = 0;
    ASSERT_EQ(syscall(__NR_io_uring_setup, 1, params.data()), -1);
    ASSERT_EQ(errno, EPERM) << "the filter is in force";

    asio::io_context io{1};
    client refused(io);
    const std::error_code opened = refused.open(config_for({"redis://127.0.0.1:1"}));
#if defined(ASIO_HAS_IO_URING_AS_DEFAULT)
    EXPECT_EQ(opened, transport_errc::io_uring_refused);
    EXPECT_NE(opened.message().find("io_uring"), std::string::npos) << opened.message();
    EXPECT_EQ(opened.message().find('\n'), std::string::npos);
    edgelock::async::lock_handle handle;
    EXPECT_EQ(refused.add_lock(lock_for("a"), handle), transport_errc::not_open);
    EXPECT_EQ(refused.open(config_for({"redis://127.0.0.1:1"})), transport_errc::io_uring_refused)
        << "asked again at the next open(), not remembered";
#else
    EXPECT_FALSE(opened) << "the epoll build never asks for io_uring: " << opened.message();
    refused.close();
#endif
}

}  // namespace

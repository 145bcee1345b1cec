// SPDX-License-Identifier: Apache-2.0
// The nemesis holder on the `edgelock` CLI: the same arguments, stdout lines and log as
// nemesis_holder.cpp, plus edgelock=<path of the edgelock command>. It runs in two roles:
//
//   wrapper (the process the runner starts): makes itself a process group leader, runs
//     `edgelock run --name N --ttl ... -- <itself> role=child <its arguments>`, waits for it
//     and prints "released <edgelock's exit status>". The runner freezes the whole group
//     (wrapper, edgelock, child): a paused machine, not a paused job beside a live renewer.
//   child (CMD, role=child): takes the fence token from the variable --fence-env names,
//     logs "hold", prints "held", and writes the token to the fenced store every step_ms for
//     work_ms until edgelock's SIGTERM (--on-lost) says the lock is lost: the CLI's held().
//     With fencing=0 it writes token 0, as a library holder without fencing does: the store
//     then refuses nothing. gate=1 prints "checked" and waits for a line on stdin before its
//     first write, as nemesis_holder.cpp does; so does delay_write=1 (S2), whose write is
//     delivered by a process of its own after the command ended and edgelock released.
//
// Every flag maps a holder argument: instances= (--redis each; --unfair when there is one,
// as the matrix's configurations are not fair), sentinels= and master= (--sentinel,
// --master, --unfair), cluster= (--cluster each, --unfair), guard= (--restart-guard), wait=
// (--wait-replicas), acquire_wait_ms=
// (--wait). edgelock's own lines (-v) go to stderr, which the runner keeps beside the log.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "nemesis_holder_common.hpp"

namespace {

using edgelock::nemesis::event_log;
using edgelock::nemesis::holder_args;
using edgelock::nemesis::holder_settings;
using edgelock::nemesis::land_delayed_write;
using edgelock::nemesis::logged_write;
using edgelock::nemesis::monotonic_us;

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : ",") + part;
    return out;
}

constexpr const char* fence_variable = "NEMESIS_FENCE";

volatile std::sig_atomic_t lost = 0;

extern "C" void on_lost_signal(int) { lost = 1; }

std::vector<std::string> edgelock_argv(const holder_args& args, const std::string& self) {
    const holder_settings settings = edgelock::nemesis::settings_from(args);
    std::vector<std::string> argv = {args.text("edgelock"),
                                     "run",
                                     "-v",
                                     "--name",
                                     settings.name,
                                     "--ttl",
                                     std::to_string(settings.ttl_ms) + "ms",
                                     "--wait",
                                     std::to_string(args.number("acquire_wait_ms", 20'000)) + "ms",
                                     "--redis-timeout",
                                     std::to_string(holder_settings::command_timeout_ms) + "ms",
                                     "--restart-guard",
                                     settings.restart_guard ? "on" : "off",
                                     "--fence-env",
                                     fence_variable};
    if (!settings.sentinels.empty()) {
        argv.insert(argv.end(),
                    {"--sentinel", join(settings.sentinels), "--master", settings.master_name});
    }
    for (const std::string& url : settings.instances) argv.insert(argv.end(), {"--redis", url});
    for (const std::string& url : settings.cluster) argv.insert(argv.end(), {"--cluster", url});
    // The matrix's configurations are not fair; Redlock never is, and takes no --unfair.
    if (settings.instances.size() <= 1) argv.push_back("--unfair");
    if (settings.replicas_to_wait > 0) {
        argv.insert(argv.end(), {"--wait-replicas", std::to_string(settings.replicas_to_wait)});
    }
    argv.insert(argv.end(), {"--", self, "role=child"});
    for (const auto& [key, value] : args.values) argv.push_back(key + "=" + value);
    return argv;
}

int wrapper(const holder_args& args, const std::string& self) {
    ::setpgid(0, 0);  // the runner's SIGSTOP reaches edgelock and its child too
    const std::vector<std::string> argv = edgelock_argv(args, self);
    const pid_t pid = ::fork();
    if (pid < 0) return 70;
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the runner kills the wrapper: edgelock goes too
        std::vector<char*> raw;
        for (const std::string& arg : argv) raw.push_back(const_cast<char*>(arg.c_str()));
        raw.push_back(nullptr);
        ::execv(raw[0], raw.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::cout << "released " << code << std::endl;
    return 0;
}

// Writes every step_ms for work_ms until edgelock reports the lock lost.
void work(const holder_args& args, event_log& log, std::int64_t token) {
    const std::string id = args.text("id");
    const std::int64_t until_us = monotonic_us() + args.number("work_ms", 500) * 1000;
    const auto step = std::chrono::milliseconds(args.number("step_ms", 20));
    while (monotonic_us() < until_us) {
        if (lost != 0) {
            log.line("lost " + id + " " + std::to_string(monotonic_us()));
            return;
        }
        logged_write(args, log, token, monotonic_us());
        std::this_thread::sleep_for(step);
    }
    log.line("end " + id + " " + std::to_string(monotonic_us()));
}

int child(const holder_args& args) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // edgelock killed: stop writing
    std::signal(SIGTERM, on_lost_signal);
    const char* fence = std::getenv(fence_variable);
    const std::int64_t token =
        args.number("fencing", 0) != 0 && fence != nullptr ? std::strtoll(fence, nullptr, 10) : 0;
    event_log log(args.text("log"));
    log.line("hold " + args.text("id") + " " + std::to_string(token) + " " +
             std::to_string(monotonic_us()));
    std::cout << "held " << token << std::endl;
    if (args.number("gate", 0) != 0 && lost == 0) {
        const std::int64_t checked_us = monotonic_us();
        std::cout << "checked" << std::endl;
        std::string go;
        std::getline(std::cin, go);
        logged_write(args, log, token, checked_us);
    }
    if (args.number("delay_write", 0) != 0 && lost == 0) {
        // S2: the write leaves and the job ends; the network (a process of its own, which
        // outlives this command, so edgelock releases) delivers it when the runner says.
        std::cout << "sent" << std::endl;
        log.line("end " + args.text("id") + " " + std::to_string(monotonic_us()));
        if (::fork() == 0) {
            land_delayed_write(args, log, token);
            ::_exit(0);
        }
        return 0;
    }
    work(args, log, token);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    holder_args args;
    if (!edgelock::nemesis::parse_holder_args(argc, argv, args) || args.text("edgelock").empty()) {
        std::cerr << "usage: nemesis_holder_cli edgelock=PATH key=value ... (see the source)"
                  << std::endl;
        return 64;
    }
    if (args.text("role") == "child") return child(args);
    return wrapper(args, argv[0]);  // the runner starts it by its full path
}

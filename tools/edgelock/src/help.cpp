// SPDX-License-Identifier: Apache-2.0
#include "help.hpp"

#include <cstddef>
#include <string>

#include "exit_codes.hpp"

namespace edgelock::cli {
namespace {

constexpr std::string_view overview =
    "edgelock: a distributed lock on Redis, from the shell (flock(1) across machines)\n"
    "\n"
    "usage:\n"
    "  edgelock run --name N [flags] -- CMD [ARGS...]  run CMD while holding lock N\n"
    "  edgelock run --name N [flags] -c 'SHELL CMD'    the same, CMD run by /bin/sh -c\n"
    "  edgelock hold --name N [flags]                  hold N until SIGINT or SIGTERM\n"
    "  edgelock status --name N [flags]                who holds N, for how long, its fence\n"
    "  edgelock list [--prefix P] [flags]              the locks held, with their holders\n"
    "  edgelock release --name N --token T [flags]     delete N if token T holds it\n"
    "  edgelock check [flags]                          what this deployment survives, per node\n"
    "  edgelock sim ARGS...                            the simulator (edgelock-sim ARGS...)\n"
    "  edgelock help [COMMAND] | COMMAND --help | --version\n"
    "\n"
    "Where Redis is (every command; flags win over the environment):\n"
    "  --redis URL          redis://[user:password@]host[:port][/db] (rediss:// for TLS);\n"
    "                       repeat an odd number of times (3, 5, 7) for Redlock\n"
    "  --sentinel HOST:PORT --master NAME\n"
    "                       find the master through Sentinel (repeat --sentinel, or give\n"
    "                       a list: --sentinel a:26379,b:26379)\n"
    "  --cluster URL        Redis Cluster: seed nodes, up to 9 (repeat, or give a list); the\n"
    "                       slot map is read from the first that answers, every node reached\n"
    "                       with its credentials and TLS; no /db (a cluster has only 0)\n"
    "  --redis-timeout D    connect and reply timeout per request, 1ms..1m (default 2s)\n"
    "  --password-file FILE the password for every address without credentials: the file's\n"
    "                       first line (refused when every user may read it); not in ps\n"
    "  EDGELOCK_REDIS, EDGELOCK_SENTINEL, EDGELOCK_MASTER, EDGELOCK_CLUSTER, EDGELOCK_PASSWORD\n"
    "                       the same from the environment (lists split on commas or spaces)\n"
    "  default: redis://127.0.0.1:6379\n"
    "\n"
    "TLS, for rediss:// addresses (the server's certificate chain, validity and name are\n"
    "always verified; a sentinel reached by rediss:// names a master reached by TLS too):\n"
    "  --tls-ca FILE        CA certificates to trust, PEM (default: the system's store)\n"
    "  --tls-ca-dir DIR     a directory of them, hashed as c_rehash(1) leaves it\n"
    "  --tls-cert FILE --tls-key FILE\n"
    "                       a client certificate and its key, for servers that ask for one\n"
    "  --tls-server-name NAME\n"
    "                       the name the certificate must carry (default: the URL's host)\n"
    "  EDGELOCK_TLS_CA, EDGELOCK_TLS_CA_DIR, EDGELOCK_TLS_CERT, EDGELOCK_TLS_KEY,\n"
    "  EDGELOCK_TLS_SERVER_NAME\n"
    "                       the same from the environment\n"
    "\n"
    "Durations: 0, 500ms, 30s, 2m, 1h, 1m30s, 1h2m3s; up to 24h.\n";

constexpr std::string_view run_help =
    "usage: edgelock run --name N [flags] [--] CMD [ARGS...]\n"
    "       edgelock run --name N [flags] -c 'SHELL COMMAND'\n"
    "\n"
    "Acquires lock N (waiting up to --wait), runs CMD, renews the lock while CMD runs\n"
    "(every ttl/3), releases it when CMD exits, and exits with CMD's status. CMD gets the\n"
    "lock's fence token in EDGELOCK_FENCE: a number that strictly increases from one holder\n"
    "to the next, for storage that can refuse writes from a stale holder.\n"
    "\n"
    "If the lock is lost while CMD runs (renewal could not reach Redis before the lease\n"
    "ended, or the key no longer holds our token), CMD gets --on-lost (default TERM), then\n"
    "SIGKILL after --kill-after, and edgelock exits 80.\n"
    "\n"
    "  --name N             the lock name, used as the Redis key (1..128 bytes)\n"
    "  --ttl D              lease length, 100ms..24h (default 30s); a crashed holder frees the\n"
    "                       lock after it\n"
    "  --wait D, -w D       how long to wait for a held lock (default 10s); 0: fail at once (75);\n"
    "                       also rides out Redis being unreachable meanwhile (a restart, a\n"
    "                       failover), retrying with backoff; when it ends, the last cause's code\n"
    "  -n                   --wait 0\n"
    "  -E CODE, --conflict-exit-code CODE\n"
    "                       exit CODE (0..255) instead of 75 or 79 when the lock stays held;\n"
    "                       CMD is not run whatever CODE is (-E 0: skipped, yet exit 0)\n"
    "  -c 'SHELL COMMAND'   run it with /bin/sh -c instead of CMD [ARGS...]\n"
    "  --wait-replicas N    Sentinel: the lock counts only once N replicas have it (WAIT), and\n"
    "                       so does each renewal; 69 when fewer confirm\n"
    "  --wait-replicas-timeout D\n"
    "                       WAIT's timeout (default half of ttl/10); below ttl/10 and\n"
    "                       --redis-timeout. EDGELOCK_WAIT_REPLICAS(_TIMEOUT) set both\n"
    "  -v, --verbose        one line on stderr per connection (made, lost), attempt, renewal\n"
    "                       (the new validity) and loss\n"
    "  --metrics-file PATH  keep the lock's metrics in PATH (Prometheus text, for\n"
    "                       node_exporter's textfile collector), replaced at each event and at\n"
    "                       exit; a directory that does not exist or cannot be written: 64\n"
    "  --unfair             poll with backoff instead of waiting in line. By default, with one\n"
    "                       Redis (or Sentinel), waiters line up in Redis and get the lock in\n"
    "                       arrival order, each woken by the release before it (a second\n"
    "                       connection while waiting); a waiter that dies leaves the line\n"
    "                       after 2 x (1s + ttl/10). With several --redis (Redlock) waiting is\n"
    "                       always unfair\n"
    "  --permits N          a counting lock (a semaphore): up to N (1..1000) hold name N at\n"
    "                       once, each with a lease and a permit (0..N-1) of its own; 1\n"
    "                       (default) is the lock. One Redis, Sentinel or a cluster only. CMD\n"
    "                       also gets its permit in EDGELOCK_PERMIT: the fence token's\n"
    "                       remainder by N, for storage that keeps the highest token per\n"
    "                       permit. Every holder must give the same N (76 otherwise)\n"
    "  --fence-env VAR      pass the fence token in VAR instead of EDGELOCK_FENCE\n"
    "  --on-lost SIGNAL     signal for CMD when the lock is lost (default TERM)\n"
    "  --kill-after D       then SIGKILL after D (default 10s)\n"
    "  --restart-guard on|off\n"
    "                       on (default): a Redis node that restarted without AOF appendfsync\n"
    "                       always counts only a TTL after its start (a lease it forgot may still\n"
    "                       run); a shorter --wait fails with 81, a longer one waits, saying so\n"
    "  --redis URL, --sentinel HOST:PORT --master NAME, --redis-timeout D, --tls-*\n"
    "                       where Redis is, and TLS (see edgelock --help)\n"
    "  --cluster URL        Redis Cluster: the lock lives on the master of N's slot; slot moves\n"
    "                       (MOVED, ASK) and failovers are followed\n"
    "\n"
    "While edgelock waits on a terminal it shows the time waited (and why, when Redis cannot be\n"
    "reached) on stderr. SIGINT, SIGTERM or SIGHUP while it waits makes it leave the line (within\n"
    "--redis-timeout) and end by that signal. While CMD runs, SIGTERM and SIGHUP sent to edgelock\n"
    "are passed on to CMD; SIGINT and SIGQUIT are left to CMD (the terminal sends them to both),\n"
    "as system(3) does.\n"
    "\n"
    "examples:\n"
    "  edgelock run --name backup --wait 0 -- /usr/local/bin/backup.sh\n"
    "  edgelock run --name orders:42 --ttl 10s --redis redis://10.0.0.5:6379 -- ./grab-order\n";

constexpr std::string_view hold_help =
    "usage: edgelock hold --name N [flags]\n"
    "\n"
    "Acquires lock N as run does (--ttl, --wait/-w, -n, -E, --unfair, --wait-replicas,\n"
    "--permits, --metrics-file, ...), prints three lines on stdout:\n"
    "  name=N\n"
    "  token=32 hex characters (what `edgelock release --token` takes)\n"
    "  fence=the fence token\n"
    "  permit=its permit, 0..N-1 (a fourth line, with --permits above 1)\n"
    "then renews the lock until SIGINT, SIGTERM or SIGHUP, releases it and exits 0; exits 80\n"
    "when the lock is lost meanwhile. When the lock is not acquired it prints nothing on\n"
    "stdout and exits with the code run would (-E CODE included). For scripts that hold a\n"
    "lock around several steps:\n"
    "  edgelock hold --name deploy > lock.env & ... ; kill $!; wait $!\n";

constexpr std::string_view status_help =
    "usage: edgelock status --name N [--json]\n"
    "                       [--redis URL ... | --sentinel HOST:PORT ... --master NAME |\n"
    "                        --cluster URL ...]\n"
    "\n"
    "Prints, for every Redis instance (on a cluster: the master of N's slot, found with\n"
    "CLUSTER SLOTS, a MOVED followed once): the holder's token (or \"none\"), and when an\n"
    "`edgelock run` holds it, its host, pid, command and since when; the lease's remaining\n"
    "time, the fence counter, and the waiters in line (fair waiting) with their positions\n"
    "and when each one's place expires. On a semaphore's name: N, the leases held, and\n"
    "every holder with its permit, description and lease left. --json prints the same as\n"
    "one JSON object.\n"
    "Exits 0 when the lock is held (on a majority of instances), 1 when it is free, 69 when\n"
    "Redis cannot be reached, 76 when it refuses.\n";

constexpr std::string_view list_help =
    "usage: edgelock list [--prefix P]\n"
    "                     [--redis URL ... | --sentinel HOST:PORT ... --master NAME |\n"
    "                      --cluster URL ...]\n"
    "\n"
    "Lists the locks held on every Redis instance (every master of a cluster): the keys\n"
    "named P... (all with no --prefix)\n"
    "holding a token (32 lowercase hex characters), other than edgelock's companion keys,\n"
    "with their remaining time and, when an `edgelock run` holds them, host, pid and\n"
    "command; a semaphore with how many of its permits are held, then each holder. It looks\n"
    "at 10000 keys per instance at most (SCAN), and says so when it\n"
    "stopped there: narrow it with --prefix. Exits 0 when it found a lock, 1 when none,\n"
    "69 when Redis cannot be reached, 76 when it refuses.\n";

constexpr std::string_view release_help =
    "usage: edgelock release --name N --token T [--redis URL ... | --sentinel HOST:PORT ... "
    "--master NAME |\n"
    "                        --cluster URL ...]\n"
    "\n"
    "For operators: deletes lock N on every instance (on a cluster: the master of N's slot, a\n"
    "MOVED followed once) where it holds token T (the token\n"
    "`edgelock status` shows), and nowhere else, so a mistyped or stale token never frees\n"
    "another owner's lock; on a semaphore, T's lease alone. The owner learns of it at its\n"
    "next renewal (a lost lock).\n"
    "Exits 0 when deleted on a majority of instances, 1 when T does not hold it, 69 when\n"
    "Redis cannot be reached.\n";

constexpr std::string_view check_help =
    "usage: edgelock check [--redis URL ... | --sentinel HOST:PORT ... --master NAME |\n"
    "                       --cluster URL ...]\n"
    "                      [--fencing on|off] [--restart-guard on|off] [--wait-replicas N]\n"
    "                      [--wait-replicas-timeout D] [--unfair] [--permits N]\n"
    "                      [--ttl D] [--json]\n"
    "\n"
    "Reads every node: role, version, uptime, persistence, eviction policy, replicas and\n"
    "their lag, and its clock against this host's; a node that cannot be read is reported\n"
    "with its error, a replica as one that cannot hold locks. With a quorum of masters left,\n"
    "runs the simulator (edgelock-sim) on this deployment's row (single, redlock-N, sentinel\n"
    "or cluster, with +WAIT, +fencing, +guard and +fair as the flags say, and +permits-3 for\n"
    "a semaphore, --permits N above 1; defaults: those of `edgelock run`: fencing on,\n"
    "restart guard on, no WAIT, fair with one instance unless --unfair), says where the\n"
    "deployment\n"
    "differs from the row, and prints the scenarios it survives and fails, a legend of\n"
    "their letters, what to change, and a verdict: safe against ...; not safe against ...;\n"
    "protect with ....\n"
    "Exits 69, 76 or 77 when a node cannot be read, 69 when the deployment cannot hold\n"
    "locks (a replica, too few masters), 78 when a node may evict lock keys, 0 otherwise;\n"
    "127 without edgelock-sim.\n"
    "On a cluster (--cluster) it reads CLUSTER SLOTS from a seed, shows every master with its\n"
    "slot ranges and replicas, reads every master and replica as above, and says whether a\n"
    "master that answers serves all 16384 slots, or which ranges are missing and why (69).\n"
    "Its row is cluster[+WAIT] with +fencing and +guard; while edgelock-sim has no such\n"
    "configuration, the report says so instead of a verdict.\n";

constexpr std::string_view sim_help =
    "usage: edgelock sim run|matrix|explore|soak [ARGS...]\n"
    "\n"
    "Runs the deterministic simulator, edgelock-sim, with ARGS (the one EDGELOCK_SIM names,\n"
    "else the one next to the edgelock binary, else on PATH). For example:\n"
    "  edgelock sim matrix --runs 20\n"
    "  edgelock sim run --scenario S1 --config single --seed 1 --svg s1.svg\n"
    "  edgelock sim explore --config redlock-5 --runs 200 --check oracle\n"
    "  edgelock sim soak --runs 10000\n"
    "  edgelock sim --help\n"
    "Its exit status is edgelock-sim's (0 every check held, 1 one was violated, 2 a usage\n"
    "error); 127 when edgelock-sim is not found, or EDGELOCK_SIM names a file that cannot\n"
    "be run.\n";

// exit_codes.hpp's table, each meaning wrapped beside its code.
std::string format_exit_codes() {
    constexpr std::size_t code_columns = 11;  // "  128+N    "
    constexpr std::size_t line_columns_max = 90;
    std::string text = "Exit codes:\n";
    for (const exit_code_meaning& row : exit_code_meanings) {
        std::string line = "  " + std::string(row.code);
        line.resize(code_columns, ' ');
        bool line_has_words = false;
        std::string_view words = row.meaning;
        while (!words.empty()) {
            const std::size_t space = words.find(' ');
            const std::string_view word = words.substr(0, space);
            words.remove_prefix(space == std::string_view::npos ? words.size() : space + 1);
            if (line_has_words && line.size() + 1 + word.size() > line_columns_max) {
                text += line + "\n";
                line.assign(code_columns, ' ');
                line_has_words = false;
            }
            line += (line_has_words ? " " : "") + std::string(word);
            line_has_words = true;
        }
        text += line + "\n";
    }
    return text;
}

}  // namespace

std::string_view exit_code_table() {
    static const std::string text = format_exit_codes();
    return text;
}

std::string_view help_text(std::string_view topic) {
    if (topic == "run") return run_help;
    if (topic == "hold") return hold_help;
    if (topic == "status") return status_help;
    if (topic == "release") return release_help;
    if (topic == "sim") return sim_help;
    if (topic == "check") return check_help;
    if (topic == "list") return list_help;
    return overview;
}

}  // namespace edgelock::cli

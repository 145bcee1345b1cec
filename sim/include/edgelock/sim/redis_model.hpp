// SPDX-License-Identifier: Apache-2.0
// edgelock sim: a Redis server, modelled for exactly what edgelock sends.
//
// The model receives the bytes the real lock and session wrote (RESP arrays of bulk strings;
// the world hands it one request at a time, split_pipeline() cutting a write of several apart
// as Redis's query buffer does), reads them with a multibulk reader of its own, and executes:
//   PING                                   +PONG (the session's handshake, session/
//   ROLE                                   handshake.hpp: Redis 7's master or slave reply;
//   SCRIPT LOAD text                       compiles and caches any script, answering its
//                                          SHA-1 (NOPERM when an ACL refuses it; a replica
//                                          answers all three)
//   INFO                                   run_id (new with every start), uptime_in_seconds
//                                          (whole seconds of its wall clock, as Redis counts
//                                          them), aof_enabled, maxmemory and its policy;
//                                          several sections are a syntax error on a 6.2 node
//   CONFIG GET appendfsync                 the persistence's fsync policy (NOPERM when an ACL
//                                          refuses it)
//   AUTH, SELECT                           as a server without a password and with database
//                                          0 only (the simulated deployments have neither)
//   SCRIPT FLUSH                           empties the script cache
//   EVALSHA digest numkeys key... arg...   runs a cached script; NOSCRIPT unless this process
//                                          has seen the script's text since it started
//   EVAL text numkeys key... arg...        runs the text, and caches it
//   WAIT numreplicas timeout_ms            blocks the connection until enough replicas
//                                          acknowledged the node's writes up to this
//                                          connection's last command (anyone's writes, as
//                                          Redis counts; none on a connection that has sent
//                                          nothing), or the timeout; replies with the count
//   GET SET DEL EXISTS PEXPIRE PERSIST     the keyspace commands the scripts call (a client
//   PTTL INCR TIME PUBLISH ZADD ZREM       may send them too), redis_commands.cpp
//   ZSCORE ZCARD ZRANGE ZRANGEBYSCORE ZREMRANGEBYSCORE
// Scripts run as shipped: the exact text in the node's Lua 5.1 interpreter (script_engine.hpp),
// redis.call reaching the commands above. Anything else is answered with an error. The fair
// scripts' sorted sets (a lock's line of waiters and their expiries) are stored as the value
// of their key (encode_zset, which marks the type), so expiry, replication, persistence and
// eviction treat them as any other key; PUBLISH goes out in node_output::published, to this
// node's subscribers only (the world delivers it; a replica's subscribers hear nothing).
//
// What real Redis does that matters for locks, and the model does too:
// - Keys expire by this process's wall clock: a key set with PX ttl at wall time w is gone
//   once the wall clock reads more than w + ttl (lazily, on access, as Redis does it; a
//   replica reports it missing and waits for its master's DEL).
// - tests/conformance holds these answers to a real redis-server 7.0.15; where they still
//   differ, and why no verdict rests on it: docs/SIMULATION.md, "Where the model differs".
// - Writes are replicated asynchronously as effects with absolute expiry times (SET ...
//   PXAT, PEXPIREAT, DEL), so a promoted replica judges expiry by its own wall clock.
// - Persistence: none (a restart comes back empty), everysec (a restart comes back with
//   the data of the last whole-second fsync: up to one second of writes is lost), always
//   (nothing acknowledged is lost). Expiry times survive in the persisted data.
// - The script cache (and the interpreter) is empty after a (re)start, and replicas never get
//   scripts (effects replication), so a promoted replica answers NOSCRIPT too, until a
//   connection's handshake loads them.
// - A replica refuses writes (READONLY): a script on it runs until its first write. With
//   replica-read-only no it takes them for itself: they do not move its replication offset
//   and reach nobody, and its master's stream and resynchronisations overwrite them.
// - Before a command runs, Redis 7.0's processCommand gates, in its order (refuse_unready):
//   a write command on a replica goes on to READONLY; a replica whose link to its master is
//   down, with replica-serve-stale-data no, answers everything but the commands flagged
//   stale (INFO, ROLE, CONFIG, SCRIPT, TIME, ...) with MASTERDOWN (PING, GET and scripts
//   without a shebang included); a node still loading its data set after a start answers
//   everything but the commands flagged loading (INFO, ROLE, CONFIG, TIME, ...) with
//   LOADING (PING, SCRIPT LOAD and WAIT included).
// - Redis Cluster (enable_cluster(), redis_cluster.cpp): the node believes an owner for each
//   slot (the ones it owns are its own; a replica's are its master's) and, during a
//   migration, the slots it is MIGRATING to or IMPORTING from another node. Before the
//   gates above, as processCommand asks getNodeByQuery: a keyed command (SET and the
//   keyspace commands by their keys, EVAL and EVALSHA by their KEYS) whose keys hash to
//   different slots answers -CROSSSLOT; for a slot with no owner -CLUSTERDOWN, and while
//   the cluster is down (set_cluster_down) -CLUSTERDOWN The cluster is down; a node
//   MIGRATING the slot answers -ASK <slot> <endpoint>:<port> of the target when every key is
//   absent, -TRYAGAIN when some are and some are not; a node IMPORTING it serves it right
//   after ASKING on that connection (ASKING: +OK, for the next command only), -TRYAGAIN
//   when a request of several keys misses some; any other node answers -MOVED <slot>
//   <endpoint>:<port> of the owner it believes. CLUSTER SLOTS answers the node's view in
//   Redis 7.0's shape ([first, last, master, replicas...], each node [endpoint, port, id,
//   []]), replicas it believes failed left out. Keyless commands (the handshake, WAIT,
//   PUBLISH) run anywhere. A cluster has database 0 only.
// - Eviction: a node with a memory limit and an evicting policy loses keys when memory runs
//   short (evict()); a master sends the evictions to its replicas as DELs, and AOF logs
//   them, as Redis does. Replicas do not evict on their own (replica-ignore-maxmemory).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "edgelock/sim/configuration.hpp"
#include "edgelock/sim/schedule.hpp"
#include "edgelock/sim/script_engine.hpp"

namespace edgelock::sim {

// One write as a replica or the persistence log receives it.
struct repl_op {
    bool del = false;  // DEL key; otherwise SET key value [PXAT expire]
    std::string key;
    std::string value;
    std::int64_t expire_at_ms = -1;  // absolute wall-clock ms, -1 for none
};

// A sorted set as the model keeps it: the members in Redis's order (score, then member
// bytes), stored as the value of its key, one "score member\n" line per member.
struct zset_member {
    std::int64_t score = 0;
    std::string member;
};
std::vector<zset_member> decode_zset(std::string_view value);
std::string encode_zset(const std::vector<zset_member>& members);

struct redis_entry {
    std::string key;
    std::string value;
    std::int64_t expire_at_ms = -1;
};

// maxmemory-policy, as far as locks care: which keys memory pressure may take.
enum class eviction_policy : std::uint8_t {
    noeviction,     // writes fail instead (the model never runs short)
    volatile_keys,  // volatile-lru and the like: keys with a TTL (lock keys, fence counters)
    all_keys,       // allkeys-lru and the like: any key
};

// Which of the scripts a request runs, recognised by digest or text: for traces and the
// workload's points only (a request's execution never depends on it).
enum class script_id : std::uint8_t {
    acquire,
    raise,
    renew,
    release,
    fair_acquire,
    fair_release,
    permit_acquire,
    permit_renew,
    permit_release,
    fair_permit_acquire,
    fair_permit_release,
    none
};
script_id script_by_digest(std::string_view digest) noexcept;
script_id script_by_text(std::string_view text) noexcept;
const char* to_string(script_id id) noexcept;

// A request as its argument strings (views into the request's bytes).
inline constexpr std::size_t request_args_max = 16;
struct request_view {
    std::array<std::string_view, request_args_max> args{};
    std::size_t count = 0;
};
// Parses one complete request (a RESP array of bulk strings) filling data[0, size).
bool parse_request(const char* data, std::size_t size, request_view& out) noexcept;
// Cuts bytes holding complete requests written back to back (a pipelined write, such as the
// handshake) into one view per request, in order. False when they are not whole requests.
bool split_pipeline(std::string_view bytes, std::vector<std::string_view>& out);
// ASCII case-insensitive comparison, as Redis matches command and subcommand names.
bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept;
// What a request is, for traces and workload points: the script it runs (SET NX PX GET is
// the lock's acquire too), or none.
script_id request_script(const request_view& request) noexcept;
// The same from the raw bytes, cheaply for the forms the lock writes ("*N $7 EVALSHA $40
// digest ..." and "*N $4 EVAL $len text ..."), by a full parse otherwise.
script_id classify_request(std::string_view bytes) noexcept;

// Redis Cluster: the slots, and the nodes as every node of the cluster knows them (the world
// numbers members as it numbers nodes).
inline constexpr std::size_t cluster_slot_count = 16384;
inline constexpr std::uint8_t no_cluster_node = 0xFF;
struct cluster_member {
    std::string endpoint;  // the preferred endpoint (cluster-preferred-endpoint-type)
    std::uint16_t port = 0;
    std::string id;  // the 40-character node id
};

// What the node wants sent after a call: replies to clients and effects for replicas.
struct node_output {
    struct reply {
        std::uint8_t client = 0;
        std::uint32_t epoch = 0;
        std::string bytes;
    };
    std::vector<reply> replies;
    std::vector<repl_op> effects;        // in order; the last has offset() of the node
    std::int64_t wait_deadline_us = -1;  // a WAIT began: wake the node then
    struct publication {                 // PUBLISH channel message
        std::string channel;
        std::string message;
    };
    std::vector<publication> published;
    // A lock key given to a token that did not hold it, or a semaphore's new lease (for the
    // FIFO check): by the fair
    // acquire (queued_score: the token's place in the line it just left, -1 when it was not
    // in it) or by a plain one (SET NX, the acquire script), which leaves the line alone.
    struct grant {
        std::string key;
        std::string token;
        bool fair = false;
        std::int64_t queued_score = -1;
    };
    std::vector<grant> grants;
    // The claim check (checker.hpp): a client counted on what this node cannot vouch for, in
    // words ("c1 sent node 0 a WAIT on a connection that wrote nothing since ...").
    std::vector<std::string> claim_faults;
    void clear() {
        replies.clear();
        effects.clear();
        published.clear();
        grants.clear();
        claim_faults.clear();
        wait_deadline_us = -1;
    }
};

// The node's Lua interpreter, made at its first script and dropped by a crash with the
// script cache. A copy of a node starts without one: it compiles the scripts it has cached
// again at their next call.
class script_engine_slot {
public:
    script_engine_slot() = default;
    script_engine_slot(const script_engine_slot&) noexcept {}
    script_engine_slot& operator=(const script_engine_slot&) noexcept {
        engine_.reset();
        return *this;
    }
    script_engine_slot(script_engine_slot&&) noexcept = default;
    script_engine_slot& operator=(script_engine_slot&&) noexcept = default;
    ~script_engine_slot() = default;
    script_engine& get() {
        if (!engine_) engine_ = std::make_unique<script_engine>();
        return *engine_;
    }
    void reset() noexcept { engine_.reset(); }

private:
    std::unique_ptr<script_engine> engine_;
};

class redis_node final : private script_host {
public:
    redis_node() = default;
    redis_node(std::uint8_t id, persistence persist, std::int64_t fsync_phase_us);

    // Bytes of one request from `client` on its connection `epoch` (a new epoch is a new
    // connection: the old one's blocked state is dropped). wall_ms is this node's wall
    // clock, now_us true time (for fsync ticks and WAIT timeouts).
    void receive(std::uint8_t client, std::uint32_t epoch, std::string_view bytes,
                 std::int64_t wall_ms, std::int64_t now_us, node_output& out);
    // A replica acknowledged `offset` of this master's stream.
    void on_ack(std::uint8_t replica, std::int64_t offset, std::int64_t wall_ms,
                std::int64_t now_us, node_output& out);
    // Answers the WAITs whose timeout has passed by now_us.
    void on_wait_deadline(std::int64_t wall_ms, std::int64_t now_us, node_output& out);
    // A client's connection is gone: forget its blocked state and queued requests.
    void drop_connection(std::uint8_t client);

    void crash(std::int64_t now_us);
    // Comes back with what persistence kept; a new replication history, empty script cache,
    // a new run_id, its uptime counted from wall_ms (its wall clock now).
    void restart(std::int64_t now_us, std::int64_t wall_ms);
    // The wall-clock instant the process started (INFO's uptime counts from it).
    void set_started(std::int64_t wall_ms) noexcept { started_wall_ms_ = wall_ms; }
    // Becomes a master (Sentinel promotion): a new replication history.
    void promote();
    // Becomes a replica of `master` and copies its data (a full resynchronisation).
    void follow(redis_node& master, std::int64_t now_us);
    // A replica that restarted while `master` could not be reached: configured to follow it,
    // nothing synchronised yet (offset 0, so the sentinels rank it last), refusing writes.
    void await_master(std::uint8_t master) noexcept;
    // Applies one replicated write numbered `offset` of its master's stream (ignores ones
    // already applied).
    void apply(const repl_op& op, std::int64_t offset, std::int64_t now_us);
    void attach_replica(std::uint8_t replica) noexcept;
    void detach_replica(std::uint8_t replica) noexcept;

    // An ACL that refuses SCRIPT LOAD (NOPERM); EVAL and EVALSHA stay allowed.
    void refuse_script_load() noexcept { script_load_refused_ = true; }
    // A Redis before 7.0 (6.2): SET with both NX and GET is a syntax error, and so is INFO
    // with several sections.
    void behave_as_redis_6() noexcept { redis_6_ = true; }
    // An ACL that refuses CONFIG GET (NOPERM).
    void refuse_config_get() noexcept { config_get_refused_ = true; }
    // Loads its data set until now_us reaches until_us (after a start): LOADING until then.
    void load_until(std::int64_t until_us) noexcept { loading_until_us_ = until_us; }
    // replica-serve-stale-data no: a replica whose link is down answers MASTERDOWN.
    void refuse_stale_data() noexcept { serve_stale_data_ = false; }
    // replica-read-only no: a replica takes writes, for itself alone (never replicated, and
    // replaced at its next full resynchronisation).
    void take_writes_as_replica() noexcept { replica_read_only_ = false; }
    // Whether a replica's link to its master is up (the world knows; Redis learns it from
    // the connection's reset, or its replication timeout).
    void set_master_link(bool up) noexcept { master_link_up_ = up; }
    // Redis Cluster (redis_cluster.cpp). Cluster mode on, among `members` (this node is
    // members[id()]), owning no slot yet.
    void enable_cluster(std::vector<cluster_member> members);
    bool cluster_enabled() const noexcept { return !members_.empty(); }
    // What this node believes of slots first..last: served by `owner` (a member, or
    // no_cluster_node). CLUSTER SETSLOT NODE, ADDSLOTS, or a gossip message.
    void set_slot_owner(std::uint16_t first, std::uint16_t last, std::uint8_t owner);
    std::uint8_t slot_owner(std::uint16_t slot) const noexcept;
    // CLUSTER SETSLOT MIGRATING (on the owner) and IMPORTING (on the target); SETSLOT NODE
    // and STABLE end both (set_slot_owner ends them too).
    void set_migrating(std::uint16_t slot, std::uint8_t to);
    void set_importing(std::uint16_t slot, std::uint8_t from);
    void clear_migration(std::uint16_t slot) noexcept;
    // What this node believes of `member`: the master it replicates (-1: a master), and
    // whether it is failed (CLUSTER SLOTS leaves a failed replica out).
    void set_member_role(std::uint8_t member, int master, bool failed);
    // cluster_state:fail (a slot's master marked FAIL and not yet replaced): every keyed
    // command is answered -CLUSTERDOWN The cluster is down, after CROSSSLOT and a slot with
    // no owner, before the redirections (cluster-allow-reads-when-down no, the default).
    void set_cluster_down(bool down) noexcept { cluster_down_ = down; }
    bool cluster_down() const noexcept { return cluster_down_; }
    // The keys of the slot this node holds now, in its order (for MIGRATE).
    std::vector<std::string> keys_in_slot(std::uint16_t slot, std::int64_t wall_ms) const;
    // MIGRATE's two halves: a copy of the key (value and expiry) to the target, which
    // restores it (RESTORE ... REPLACE: replicated as a SET), and its deletion on the source
    // (replicated as a DEL). Between them the key is on both nodes.
    void restore_key(const redis_entry& entry, std::vector<repl_op>& effects);
    void delete_key(std::string_view key, std::vector<repl_op>& effects);

    // Runs with a memory limit and this policy (INFO memory reports both).
    void set_eviction(eviction_policy policy) noexcept { eviction_ = policy; }
    // Memory ran short: a master evicts every key its policy allows, as DELs in `effects`.
    void evict(std::int64_t now_us, std::vector<repl_op>& effects);

    std::uint8_t id() const noexcept { return id_; }
    bool up() const noexcept { return up_; }
    bool is_master() const noexcept { return master_id_ < 0; }
    int master_id() const noexcept { return master_id_; }
    std::int64_t offset() const noexcept { return offset_; }
    std::uint32_t incarnation() const noexcept { return incarnation_; }
    persistence persist() const noexcept { return persist_; }
    std::uint32_t master_incarnation() const noexcept { return master_incarnation_; }
    const std::vector<redis_entry>& data() const noexcept { return data_; }
    // The live value of `key` at wall_ms, or null (no side effects).
    const redis_entry* peek(std::string_view key, std::int64_t wall_ms) const noexcept;

private:
    struct client_state {  // one client connection's: its epoch, WAIT and what queued behind it
        std::uint32_t epoch = 0;
        std::int64_t wait_offset = 0;  // the offset after its last command: what WAIT awaits
        bool blocked = false;
        std::int64_t wait_replicas = 0;
        std::int64_t wait_target = 0;  // a blocked WAIT's offset
        std::int64_t wait_deadline_us = 0;
        std::deque<std::string> queued;  // requests that arrived while blocked
        bool asking = false;             // Redis Cluster: ASKING was its last command
        // The claim check: a write ran on the connection since it was made or since its last
        // WAIT (what a WAIT confirms), and the connection asked ROLE.
        bool wrote_since_wait = false;
        bool asked_role = false;
    };

    void execute(std::uint8_t client, std::string_view bytes, std::int64_t wall_ms,
                 std::int64_t now_us, node_output& out);
    void judge_claim_before(std::uint8_t client, std::string_view command, node_output& out);
    void judge_claim_after(std::uint8_t client, std::size_t effects_before, node_output& out);
    bool answer_handshake(const request_view& r, std::int64_t wall_ms, std::string& reply);
    void answer_auth_or_select(const request_view& r, std::string& reply) const;
    bool refuse_unready(const request_view& r, std::int64_t now_us, std::string& reply) const;
    void append_info(std::int64_t wall_ms, std::string& reply) const;
    void append_fsync_policy(std::string& reply) const;
    void append_role(std::string& reply) const;

    // Scripts (script_engine.hpp): EVAL, EVALSHA and SCRIPT LOAD.
    struct cached_script {
        std::array<char, 40> digest{};  // script_digest.hpp
        std::string text;
    };
    void eval(const request_view& r, bool by_text, std::int64_t wall_ms, std::string& reply,
              node_output& out);
    const cached_script* cache_script(std::string_view text, std::string& reply);
    void script_command(const request_view& request, std::string& reply) override;

    // The keyspace's commands (redis_commands.cpp), from a client or from a script's
    // redis.call. False when `r` names none of them.
    bool keyspace_command(const request_view& r, bool from_script, std::int64_t wall_ms,
                          std::string& reply, node_output& out);
    void get_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                     node_output& out);
    void set_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                     node_output& out);
    void del_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                     node_output& out);
    void exists_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                        node_output& out);
    void pexpire_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                         node_output& out);
    void persist_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                         node_output& out);
    void pttl_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                      node_output& out);
    void incr_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                      node_output& out);
    void incrby_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                        node_output& out);
    // INCR and INCRBY: `key`'s integer plus `by`, as Redis refuses a non-integer or an overflow.
    void add_to_integer(std::string_view key, std::int64_t by, std::int64_t wall_ms,
                        std::string& reply, node_output& out);
    void time_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                      node_output& out);
    void publish_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                         node_output& out);
    void zadd_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                      node_output& out);
    void zrem_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                      node_output& out);
    void zscore_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                        node_output& out);
    void zcard_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                       node_output& out);
    void zrange_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                        node_output& out);
    void zrangebyscore_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                               node_output& out);
    void zremrangebyscore_command(const request_view& r, std::int64_t wall_ms, std::string& reply,
                                  node_output& out);
    // The sorted set at `key` into `members` (empty for none); false, with WRONGTYPE in
    // `reply`, when the key holds a string.
    bool load_zset(std::string_view key, std::int64_t wall_ms, std::vector<zset_member>& members,
                   std::string& reply, std::vector<repl_op>& effects);
    // ZRANGEBYSCORE and ZREMRANGEBYSCORE: the set at args[1] and the [first, last) slice of it
    // scored within args[2] .. args[3]; false, with the error in `reply`, for bad bounds or
    // a string at the key.
    bool load_score_range(const request_view& r, std::int64_t wall_ms,
                          std::vector<zset_member>& members,
                          std::pair<std::size_t, std::size_t>& range, std::string& reply,
                          std::vector<repl_op>& effects);
    // Stores the set keeping the key's expiry (ZADD, ZREM); an empty set deletes the key.
    void store_zset(std::string_view key, const std::vector<zset_member>& members,
                    std::int64_t wall_ms, std::vector<repl_op>& effects);
    // Whether ZADD's new `member` of `key` is a semaphore's lease granted (note_grant).
    bool takes_lease(std::string_view key, std::string_view member) const noexcept;
    // A SET that gave `key` a new value, or a semaphore's new lease: a grant for the FIFO check.
    void note_grant(std::string_view key, std::string_view value, std::int64_t wall_ms,
                    node_output& out) const;
    // Redis Cluster: true, with the redirect or refusal in `reply`, when this node does not
    // serve `r` now (getNodeByQuery; `asking`: ASKING came just before on its connection).
    // cluster_command: ASKING and CLUSTER SLOTS, true with their answer.
    bool cluster_refuses(bool asking, const request_view& r, std::int64_t wall_ms,
                         std::string& reply) const;
    bool cluster_command(client_state& c, const request_view& r, std::string& reply) const;
    void append_cluster_slots(std::string& reply) const;
    void append_cluster_node(std::uint8_t member, std::string& reply) const;
    std::string endpoint_of(std::uint8_t member) const;
    void wait(std::uint8_t client, const request_view& r, std::int64_t now_us, std::string& reply,
              node_output& out);
    void unblock_ready(std::int64_t wall_ms, std::int64_t now_us, node_output& out);
    std::int64_t acked_replicas(std::int64_t offset) const noexcept;

    redis_entry* find(std::string_view key, std::int64_t wall_ms, std::vector<repl_op>& effects);
    void set(std::string_view key, std::string_view value, std::int64_t expire_at_ms,
             std::vector<repl_op>& effects);
    void erase(std::string_view key, std::vector<repl_op>& effects);
    void apply_local(const repl_op& op);
    void sync_durable(std::int64_t now_us);

    std::uint8_t id_ = 0;
    bool up_ = true;
    int master_id_ = -1;
    std::uint32_t incarnation_ = 1;         // changes with every new replication history
    std::uint32_t master_incarnation_ = 0;  // replicas: the history they follow
    std::int64_t offset_ = 0;               // writes produced (master) or applied (replica)
    std::vector<cached_script> scripts_;    // the script cache, emptied by a crash
    script_engine_slot engine_;
    // While a script runs: its KEYS (a grant's line is KEYS[2] of a fair acquire), its
    // time and where its commands' effects go.
    const std::string_view* script_keys_ = nullptr;
    std::size_t script_keys_count_ = 0;
    std::int64_t script_wall_ms_ = 0;
    node_output* script_out_ = nullptr;
    bool script_load_refused_ = false;
    bool redis_6_ = false;
    bool config_get_refused_ = false;
    bool serve_stale_data_ = true;
    bool replica_read_only_ = true;
    bool master_link_up_ = true;
    std::int64_t loading_until_us_ = 0;
    eviction_policy eviction_ = eviction_policy::noeviction;
    std::uint32_t runs_ = 1;  // starts of the process: its run_id
    std::int64_t started_wall_ms_ = 0;
    persistence persist_ = persistence::none;
    std::int64_t fsync_phase_us_ = 0;
    std::int64_t fsync_tick_ = -1;  // everysec: last fsync captured in durable_
    std::vector<redis_entry> data_;
    std::vector<redis_entry> durable_;  // what a restart comes back with
    std::uint16_t replicas_ = 0;        // bit per attached replica node
    std::array<std::int64_t, nodes_max> acked_{};
    // Redis Cluster: the members (empty: cluster mode off), the owner this node believes of
    // each slot, the slots it migrates or imports (slot, the other node), and what it
    // believes of each member's role.
    std::vector<cluster_member> members_;
    std::vector<std::uint8_t> slot_owner_;
    std::vector<std::pair<std::uint16_t, std::uint8_t>> migrating_;
    std::vector<std::pair<std::uint16_t, std::uint8_t>> importing_;
    std::vector<std::pair<int, bool>> member_roles_;  // (master or -1, failed)
    bool cluster_down_ = false;
    // Per connection: each client's command connection, then its subscriber (world.hpp's
    // model_client).
    std::array<client_state, 2 * clients_max> clients_{};
};

}  // namespace edgelock::sim

// SPDX-License-Identifier: Apache-2.0
// edgelock: fixed-size storage for one completion handler, with no heap allocation.
//
// Every lock in the async client's table owns three of these (acquire, release, lost), made
// when the table is built. Storing a handler is a placement-new into the slot; completing it
// moves it out to the stack first (so the handler may start the next operation on the same
// lock) and calls it. A handler that does not fit is refused at compile time, never
// allocated: capture a pointer to your state instead of the state itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <system_error>
#include <type_traits>
#include <utility>

namespace edgelock::async {

// The largest handler object one slot holds, in bytes (a lambda capturing up to eight
// pointers). Alignment up to alignof(std::max_align_t).
inline constexpr std::size_t handler_bytes_max = 64;

namespace detail {

class handler_slot {
public:
    handler_slot() noexcept = default;
    handler_slot(const handler_slot&) = delete;
    handler_slot& operator=(const handler_slot&) = delete;
    handler_slot(handler_slot&& other) noexcept { take(other); }
    handler_slot& operator=(handler_slot&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    ~handler_slot() { reset(); }

    // Stores `f`, callable as f(std::error_code, std::int64_t).
    template <typename F>
    void emplace_with_value(F&& f) noexcept {
        emplace<value_adapter<std::decay_t<F>>>(std::forward<F>(f));
    }

    // Stores `f`, callable as f(std::error_code).
    template <typename F>
    void emplace_with_code(F&& f) noexcept {
        emplace<code_adapter<std::decay_t<F>>>(std::forward<F>(f));
    }

    bool empty() const noexcept { return ops_ == nullptr; }

    // Empties the slot, then calls the handler it held (if any) once.
    void complete(std::error_code code, std::int64_t value = 0) {
        if (ops_ == nullptr) return;
        handler_slot local(std::move(*this));
        local.ops_->call(local.storage_, code, value);
    }

    // Calls the handler (if any) and leaves it in the slot. The handler must not store into
    // or reset the slot it runs from: call it from a slot of its own, moved out of the shared
    // one, and decide afterwards whether it goes back.
    void call(std::error_code code, std::int64_t value = 0) {
        if (ops_ != nullptr) ops_->call(storage_, code, value);
    }

    void reset() noexcept {
        if (ops_ == nullptr) return;
        ops_->destroy(storage_);
        ops_ = nullptr;
    }

private:
    struct operations {
        void (*call)(void* self, std::error_code code, std::int64_t value);
        void (*relocate)(void* from, void* to) noexcept;  // move into `to`, destroy `from`
        void (*destroy)(void* self) noexcept;
    };

    template <typename F>
    struct value_adapter {
        F f;
        void operator()(std::error_code code, std::int64_t value) { f(code, value); }
    };

    template <typename F>
    struct code_adapter {
        F f;
        void operator()(std::error_code code, std::int64_t) { f(code); }
    };

    template <typename A>
    struct operations_for {
        static void call(void* self, std::error_code code, std::int64_t value) {
            (*static_cast<A*>(self))(code, value);
        }
        static void relocate(void* from, void* to) noexcept {
            A* source = static_cast<A*>(from);
            ::new (to) A(std::move(*source));
            source->~A();
        }
        static void destroy(void* self) noexcept { static_cast<A*>(self)->~A(); }
        static constexpr operations table{&call, &relocate, &destroy};
    };

    template <typename A, typename F>
    void emplace(F&& f) noexcept {
        static_assert(sizeof(A) <= handler_bytes_max,
                      "edgelock: the handler is larger than handler_bytes_max; capture a "
                      "pointer to its state instead of the state");
        static_assert(alignof(A) <= alignof(std::max_align_t), "edgelock: handler over-aligned");
        static_assert(std::is_nothrow_move_constructible_v<A>,
                      "edgelock: handlers must be nothrow move constructible");
        reset();
        ::new (static_cast<void*>(storage_)) A{std::forward<F>(f)};
        ops_ = &operations_for<A>::table;
    }

    void take(handler_slot& other) noexcept {
        if (other.ops_ == nullptr) return;
        other.ops_->relocate(other.storage_, storage_);
        ops_ = other.ops_;
        other.ops_ = nullptr;
    }

    const operations* ops_ = nullptr;
    alignas(std::max_align_t) unsigned char storage_[handler_bytes_max];
};

}  // namespace detail
}  // namespace edgelock::async

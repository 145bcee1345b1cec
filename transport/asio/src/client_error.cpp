#include "edgelock/asio_client.hpp"

#include <string>

namespace edgelock::async {
namespace {

const char* describe(client_error code) noexcept {
    switch (code) {
        case client_error::auth_failed: return "authentication refused";
        case client_error::select_failed: return "SELECT of the database refused";
        case client_error::not_master: return "the server is not a master";
        case client_error::master_unknown: return "no sentinel named the master";
        case client_error::master_changed: return "sentinel announced a new master";
        case client_error::readonly: return "write refused by a read-only replica";
        case client_error::connect_timeout: return "connect timed out";
        case client_error::command_timeout: return "reply timed out";
        case client_error::not_open: return "client not open";
        case client_error::already_open: return "client already open";
        case client_error::table_full: return "lock table full";
        case client_error::invalid_handle: return "invalid lock handle";
        case client_error::operation_in_progress: return "operation already in progress";
        case client_error::lock_busy: return "lock held or busy";
    }
    return "unknown edgelock.asio error";
}

class client_error_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "edgelock.asio"; }
    std::string message(int value) const override {
        return describe(static_cast<client_error>(value));
    }
};

}  // namespace

const std::error_category& client_category() noexcept {
    static const client_error_category category;
    return category;
}

}  // namespace edgelock::async

// SPDX-License-Identifier: Apache-2.0
// inventory: concurrent stock deduction (扣减库存) that never oversells, with edgelock's
// blocking client.
//
//   inventory [redis://127.0.0.1:6379] [--no-lock]
//
// Four shops sell the same item, 10 in stock, and each takes 6 orders at once (24 orders for
// 10 items). Every sale reads the stock, checks it is above zero, spends a few milliseconds
// on payment, and writes the stock back one lower: a read-modify-write that is only correct
// when no other shop runs it at the same time. Each shop is a thread with its own lock
// object, as if on its own machine. A separate counter (INCR, atomic) records every sale made.
//
// With the lock, exactly 10 sales are made and the stock ends at 0. With --no-lock, shops
// read the same stock, each sells "the last items", and updates overwrite one another: more
// sales than stock (oversold), and a stock count that no longer matches the sales.
//
// Exits 0 when sales + stock left == the initial stock and nothing was oversold, 1 otherwise.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "app_store.hpp"
#include "edgelock/blocking_lock.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int initial_stock = 10;
constexpr int shops = 4;
constexpr int orders_per_shop = 6;
const std::string stock_key = "sku:42:stock";
const std::string sales_key = "sku:42:sales";

struct shop_result {
    int sold = 0;
    int refused = 0;  // out of stock
    int failed = 0;   // the lock could not be had
};

shop_result run_shop(const std::string& url, bool use_lock) {
    app_store db(url);
    edgelock::blocking::lock lock;
    edgelock::blocking::lock_options options;
    options.name = "sku:42:lock";
    options.instances = {url};
    options.ttl_ms = 5'000;
    options.retry_delay_ms_min = 2;  // waiters retry quickly: sales take milliseconds
    options.retry_delay_ms_max = 20;
    shop_result result;
    if (lock.open(options)) {
        result.failed = orders_per_shop;
        return result;
    }
    for (int order = 0; order < orders_per_shop; ++order) {
        if (use_lock && lock.acquire(10s)) {
            ++result.failed;
            continue;
        }
        const int stock = std::stoi(db.get(stock_key));
        if (stock > 0) {
            std::this_thread::sleep_for(3ms);  // payment
            db.set(stock_key, std::to_string(stock - 1));
            db.incr(sales_key);
            ++result.sold;
        } else {
            ++result.refused;
        }
        // The sale is done either way; a release that fails leaves the key to end with its TTL.
        if (use_lock) (void)lock.release();
    }
    return result;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a reset Redis connection is an error code, not the end
    std::string url = "redis://127.0.0.1:6379";
    bool use_lock = true;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--no-lock") use_lock = false;
        else url = arg;
    }
    app_store db(url);
    db.set(stock_key, std::to_string(initial_stock));
    db.set(sales_key, "0");

    std::vector<shop_result> results(shops);
    std::vector<std::thread> threads;
    for (int s = 0; s < shops; ++s)
        threads.emplace_back([&, s] { results[s] = run_shop(url, use_lock); });
    for (std::thread& t : threads) t.join();

    int refused = 0;
    int failed = 0;
    for (int s = 0; s < shops; ++s) {
        std::printf("shop %d: sold %d, out of stock %d\n", s + 1, results[s].sold,
                    results[s].refused);
        refused += results[s].refused;
        failed += results[s].failed;
    }
    const int sales = std::stoi(db.get(sales_key));
    const int left = std::stoi(db.get(stock_key));
    const int oversold = sales > initial_stock ? sales - initial_stock : 0;
    const int lost_updates = initial_stock - left - sales < 0 ? sales - (initial_stock - left) : 0;
    const bool ok = oversold == 0 && sales + left == initial_stock && failed == 0;
    std::printf(
        "inventory%s: %s: %d in stock, %d orders from %d shops: %d sold, %d left, %d out of stock",
        use_lock ? "" : " (no lock)", ok ? "OK" : "FAILED", initial_stock, shops * orders_per_shop,
        shops, sales, left, refused);
    if (oversold > 0) std::printf(", OVERSOLD by %d", oversold);
    if (lost_updates > 0) std::printf(", %d stock updates lost", lost_updates);
    if (failed > 0) std::printf(", %d orders could not get the lock", failed);
    std::printf("\n");
    return ok ? 0 : 1;
}

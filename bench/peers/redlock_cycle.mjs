// SPDX-License-Identifier: Apache-2.0
// node-redlock's acquire + release cycle, one at a time, over the Redis URLs given: one URL is
// a single instance, five are Redlock's masters. Prints "<cycles> cycles in <seconds> s".
// Usage: node redlock_cycle.mjs CYCLES URL...
import Redis from "ioredis";
import Redlock from "redlock";

const [cycles, ...urls] = process.argv.slice(2);
const count = Number(cycles);
const clients = urls.map((url) => new Redis(url, { enableOfflineQueue: true }));
const redlock = new Redlock(clients, { retryCount: 0, driftFactor: 0.01 });
redlock.on("error", () => {});

async function cycle() {
  const lock = await redlock.acquire(["bench:redlock-node"], 30000);
  await lock.release();
}

for (let i = 0; i < Math.min(2000, count); ++i) await cycle();  // warm-up
const start = process.hrtime.bigint();
for (let i = 0; i < count; ++i) await cycle();
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
console.log(`${count} cycles in ${seconds.toFixed(3)} s`);
await Promise.all(clients.map((c) => c.quit()));

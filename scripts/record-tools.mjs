// record-tools.mjs: the body of scripts/record-tools (read that first).
//
// For each pinned MCP server package below it installs the exact version
// into a fresh temporary directory (npm install --ignore-scripts: no
// postinstall downloads of browsers), starts the server over stdio with
// no credentials, sends initialize, notifications/initialized and
// tools/list (following nextCursor), and writes
// testdata/tools-recorded/<package>@<version>.json with the raw `tools`
// array exactly as the server sent it. Only these top-level versions are
// pinned (no lockfile: dependencies resolve on the day of the run); the
// committed recordings, not this script, are what the tests use
// (testdata/tools-recorded/README.md, "What is pinned").
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "testdata", "tools-recorded");

// name: npm package; version: exact; bin: the package's executable;
// args: given after it ({dir} is a scratch directory); env: added.
export const servers = [
  { name: "@modelcontextprotocol/server-everything", version: "2026.8.31", bin: "mcp-server-everything", args: ["stdio"] },
  { name: "@modelcontextprotocol/server-filesystem", version: "2026.8.31", bin: "mcp-server-filesystem", args: ["{dir}"] },
  { name: "@modelcontextprotocol/server-memory", version: "2026.8.31", bin: "mcp-server-memory", env: { MEMORY_FILE_PATH: "{dir}/memory.jsonl" } },
  { name: "@modelcontextprotocol/server-sequential-thinking", version: "2026.8.31", bin: "mcp-server-sequential-thinking" },
  { name: "@modelcontextprotocol/server-github", version: "2025.4.8", bin: "mcp-server-github" },
  { name: "@modelcontextprotocol/server-puppeteer", version: "2025.5.12", bin: "mcp-server-puppeteer" },
  { name: "@playwright/mcp", version: "0.0.83", bin: "playwright-mcp" },
  { name: "@wonderwhy-er/desktop-commander", version: "0.2.52", bin: "desktop-commander" },
  { name: "chrome-devtools-mcp", version: "1.11.0", bin: "chrome-devtools-mcp" },
  { name: "@notionhq/notion-mcp-server", version: "2.5.2", bin: "notion-mcp-server" },
];

function fileName(s) {
  return s.name.replace(/^@/, "").replace(/\//g, "__") + "@" + s.version + ".json";
}

function exchange(cmd, args, env, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
    let buf = "";
    let stderr = "";
    const pending = new Map();
    let nextId = 1;
    const timer = setTimeout(() => { child.kill("SIGKILL"); reject(new Error("timed out; stderr:\n" + stderr)); }, 120000);
    child.stderr.on("data", (d) => { stderr += d; });
    child.on("exit", (code) => { for (const [, p] of pending) p.reject(new Error(`server exited ${code}; stderr:\n${stderr}`)); });
    child.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let msg;
        try { msg = JSON.parse(line); } catch { continue; }
        if (msg.id !== undefined && pending.has(msg.id) && !msg.method) {
          const p = pending.get(msg.id);
          pending.delete(msg.id);
          msg.error ? p.reject(new Error(JSON.stringify(msg.error))) : p.resolve(msg.result);
        } else if (msg.id !== undefined && msg.method) {
          // A request from the server (roots/list, ping): answer it minimally.
          const result = msg.method === "roots/list" ? { roots: [] } : {};
          child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }) + "\n");
        }
      }
    });
    const request = (method, params) => new Promise((res, rej) => {
      const id = nextId++;
      pending.set(id, { resolve: res, reject: rej });
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
    (async () => {
      const init = await request("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "berth-record-tools", version: "1" },
      });
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
      const tools = [];
      let cursor;
      do {
        const r = await request("tools/list", cursor ? { cursor } : {});
        tools.push(...r.tools);
        cursor = r.nextCursor;
      } while (cursor);
      return { init, tools };
    })().then((r) => { clearTimeout(timer); child.kill("SIGTERM"); resolve(r); },
      (e) => { clearTimeout(timer); child.kill("SIGKILL"); reject(e); });
  });
}

const only = process.argv.slice(2);
mkdirSync(out, { recursive: true });
let failed = 0;
for (const s of servers) {
  if (only.length && !only.includes(s.name)) continue;
  const dir = mkdtempSync(join(tmpdir(), "berth-record-"));
  try {
    const home = join(dir, "home");
    const scratch = join(dir, "scratch");
    mkdirSync(home); mkdirSync(scratch);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "record", private: true }));
    execFileSync("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact", `${s.name}@${s.version}`],
      { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
    const installed = JSON.parse(readFileSync(join(dir, "node_modules", s.name, "package.json"), "utf8"));
    const sub = (v) => v.replaceAll("{dir}", scratch);
    const env = { PATH: process.env.PATH, HOME: home, TMPDIR: dir, NODE_ENV: "production" };
    for (const [k, v] of Object.entries(s.env || {})) env[k] = sub(v);
    // The bin's script, from the installed package.json (not node_modules/.bin:
    // a shell shim there on some platforms).
    const bins = typeof installed.bin === "string" ? { [s.bin]: installed.bin } : installed.bin || {};
    if (!bins[s.bin]) throw new Error(`no bin ${s.bin} in ${s.name}: ${Object.keys(bins).join(", ")}`);
    const args = [join(dir, "node_modules", s.name, bins[s.bin]), ...(s.args || []).map(sub)];
    const { init, tools } = await exchange(process.execPath, args, env, scratch);
    const rec = {
      package: s.name,
      version: installed.version,
      license: installed.license ?? null,
      command: [s.bin, ...(s.args || []).map((a) => a.replaceAll("{dir}", "DIR"))],
      recordedAt: new Date().toISOString().slice(0, 10),
      node: process.version,
      protocolVersion: init.protocolVersion,
      serverInfo: init.serverInfo,
      tools,
    };
    writeFileSync(join(out, fileName(s)), JSON.stringify(rec, null, 2) + "\n");
    console.log(`${s.name}@${installed.version}: ${tools.length} tools`);
  } catch (e) {
    failed++;
    console.error(`${s.name}@${s.version}: ${e.message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
process.exit(failed ? 1 : 0);

// The README's browser lines (its ```js block) run in node against a real server, with a minimal
// EventSource over fetch in place of the browser's: after a move, an insert, a leave and an
// update in place, the rows they hold must equal a fetch. Run by scripts/live/readme_eventsource.sh.
//
//   node readme_eventsource.mjs BASE_URL LINES.js
const base = process.argv[2];
globalThis.EventSource = class {
  constructor(path) { this.handlers = {}; this.run(base + path); }
  addEventListener(kind, f) { this.handlers[kind] = f; }
  async run(url) {
    const answer = await fetch(url, { headers: { Accept: "text/event-stream" } });
    const decoder = new TextDecoder(); let text = "";
    for await (const chunk of answer.body) {
      text += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = text.indexOf("\n\n")) >= 0) {
        const block = text.slice(0, end); text = text.slice(end + 2);
        let kind = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) kind = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (this.handlers[kind]) this.handlers[kind]({ data });
      }
    }
  }
};
let last = null;
globalThis.render = rows => { last = rows.map(r => `${r.title}:${r.priority}:${r.done}`).join(","); console.log("render", last); };
const fs = await import("node:fs");
eval(fs.readFileSync(process.argv[3], "utf8"));
const patch = (pk, body) => fetch(`${base}/v1/objects/Task/${pk}`, { method: "PATCH", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
await new Promise(r => setTimeout(r, 500));
await patch(2, { priority: 5 });             // moves b to the top
await fetch(`${base}/v1/objects/Task`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ title: "d", priority: 3 }) });
await patch(1, { done: true });              // a leaves
await patch(3, { title: "c2" });             // an update in place
await new Promise(r => setTimeout(r, 1500));
const fetched = await (await fetch(`${base}/v1/objects/Task?where=${encodeURIComponent("done == NO")}&sort=-priority&limit=50`)).json();
const expected = fetched.objects.map(r => `${r.title}:${r.priority}:${r.done}`).join(",");
console.log(last === expected ? "README EventSource lines: the rows equal a fetch" : `DIFFER: ${last} vs ${expected}`);
process.exit(last === expected ? 0 : 1);

// emocaustics view: configs -> samples -> one sample (alone, or beside another config's answer to it); several runs:
// their paired configs -> the samples, filtered where the runs differ -> one sample in every run, side by side.
// Data arrive as scripts (data/<path>.js calls window.__ev), so the page works served and from file://.
"use strict";

const pending = {};
const loaded = {};
window.__ev = function (path, data) {
  loaded[path] = data;
  (pending[path] || []).forEach((f) => f(data));
  delete pending[path];
};

function load(path) {
  if (path in loaded) return Promise.resolve(loaded[path]);
  return new Promise((resolve, reject) => {
    if (pending[path]) { pending[path].push(resolve); return; }
    pending[path] = [resolve];
    const s = document.createElement("script");
    s.src = "data/" + path + ".js";
    s.onerror = () => { delete pending[path]; reject(new Error("cannot load " + path)); };
    document.head.appendChild(s);
  });
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function fmt(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(4);
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function pretty(v) { return v === undefined ? "" : JSON.stringify(v, null, 2); }

const main = () => document.getElementById("main");
function show(...nodes) { const m = main(); m.replaceChildren(...nodes); }

// -- configs ---------------------------------------------------------------------------------------------------
async function viewConfigs() {
  const index = await load("index");
  const rows = index.configs.map((c) => el("tr", { class: "config", "data-label": c.label,
      onclick: () => { location.hash = "#/c/" + c.i; } },
    el("td", {}, el("a", { class: "config-link", href: "#/c/" + c.i }, c.label)),
    el("td", {}, c.task), el("td", {}, c.method), el("td", {}, c.model || ""), el("td", {}, c.samples),
    el("td", { class: c.failed ? "status-failed" : "" }, c.failed), el("td", {}, fmt(c.score))));
  show(el("h2", {}, "Configs"),
    el("table", { id: "configs" }, el("tr", {}, ...["config", "task", "method", "model", "samples", "failed",
      "mean score"].map((h) => el("th", {}, h))), rows));
}

// -- samples of one config -------------------------------------------------------------------------------------
const listState = {};  // per config: filters and sort, kept while moving between pages

async function viewSamples(i) {
  const table = await load("c/" + i);
  const st = listState[i] || (listState[i] = { status: "all", q: "", metric: "", min: "", max: "", sort: null,
                                               desc: false });
  const cols = ["sample_id", "status", ...table.metrics, "reason"];
  const tbody = el("tbody");
  const count = el("span", { id: "count" });
  const statuses = ["all", ...new Set(table.rows.map((r) => r.status))];
  const statusSel = el("select", { id: "status", onchange: (e) => { st.status = e.target.value; render(); } },
    statuses.map((s) => el("option", { value: s, selected: s === st.status ? "selected" : null }, s)));
  const search = el("input", { id: "search", type: "search", placeholder: "text search (id, reason, input, gold, " +
    "prediction)", size: 40, value: st.q, oninput: (e) => { st.q = e.target.value; render(); } });
  const metricSel = el("select", { id: "metric", onchange: (e) => { st.metric = e.target.value; render(); } },
    el("option", { value: "" }, "metric…"), table.metrics.map((m) => el("option", { value: m,
      selected: m === st.metric ? "selected" : null }, m)));
  const min = el("input", { id: "min", type: "number", step: "any", placeholder: "min", size: 6, value: st.min,
                            oninput: (e) => { st.min = e.target.value; render(); } });
  const max = el("input", { id: "max", type: "number", step: "any", placeholder: "max", size: 6, value: st.max,
                            oninput: (e) => { st.max = e.target.value; render(); } });
  const head = el("tr", {}, cols.map((c) => el("th", { "data-col": c, onclick: () => {
    st.desc = st.sort === c ? !st.desc : false; st.sort = c; render(); } }, c)));

  function visible() {
    const q = st.q.toLowerCase();
    let rows = table.rows.map((r, j) => ({ r, j })).filter(({ r }) =>
      (st.status === "all" || r.status === st.status) && (!q || (r.search || "").toLowerCase().includes(q)));
    if (st.metric) {
      rows = rows.filter(({ r }) => {
        const v = r[st.metric];
        if (st.min !== "" && !(typeof v === "number" && v >= Number(st.min))) return false;
        if (st.max !== "" && !(typeof v === "number" && v <= Number(st.max))) return false;
        return true;
      });
    }
    if (st.sort) {
      const k = st.sort, sign = st.desc ? -1 : 1;
      rows.sort((a, b) => {
        const x = a.r[k], y = b.r[k];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sign;
      });
    }
    return rows;
  }
  function render() {
    const rows = visible();
    count.textContent = rows.length + " of " + table.rows.length + " samples";
    head.querySelectorAll("th").forEach((th) => {
      th.className = th.dataset.col === st.sort ? (st.desc ? "sorted-desc" : "sorted-asc") : "";
    });
    tbody.replaceChildren(...rows.map(({ r, j }) => el("tr", { class: "sample", "data-id": r.sample_id,
        onclick: () => { location.hash = "#/s/" + i + "/" + j; } },
      cols.map((c) => el("td", { class: c === "status" ? "status-" + r.status : null },
        c === "reason" ? fmt(r[c]).slice(0, 160) : fmt(r[c]))))));
  }
  show(el("h2", {}, table.label),
    el("div", { class: "filters" }, "status", statusSel, search, metricSel, min, max, count),
    el("table", { id: "samples" }, el("thead", {}, head), tbody));
  render();
}

// -- one sample ------------------------------------------------------------------------------------------------
function section(title, ...body) { return el("section", {}, el("h3", {}, title), ...body); }

function renderSection(s) {
  if (s.kind === "text") return section(s.title, el("pre", {}, s.text || ""));
  if (s.kind === "table") {
    return section(s.title, el("table", { class: "task-table" },
      el("tr", {}, (s.columns || []).map((c) => el("th", {}, c))),
      (s.rows || []).map((row, n) => el("tr", { class: (s.marks || [])[n] || null },
        row.map((v) => el("td", {}, fmt(v)))))));
  }
  return section(s.title, el("pre", { class: s.side || null }, pretty(s.value)));
}

function markOf(item) {
  for (const [k, v] of Object.entries(item)) {
    if (!/outcome|decision|verdict|match|correct|credit/i.test(k)) continue;
    const t = String(v).toLowerCase();
    if (v === true || /^(correct|ok|match|matched|hit|tp|true|1(\.0)?)$/.test(t)) return "ok";
    if (/missed|miss|fn|unmatched/.test(t)) return "miss";
    if (v === false || /wrong|bad|fp|false|spurious|^0(\.0)?$/.test(t)) return "bad";
  }
  return null;
}

function renderItems(items) {
  if (!items || !items.length) return null;
  const cols = Object.keys(items[0]).filter((c) => c !== "sample_id");
  return section("Item decisions (" + items.length + ")", el("table", { class: "items" },
    el("tr", {}, cols.map((c) => el("th", {}, c))),
    items.map((it) => el("tr", { class: markOf(it) }, cols.map((c) => el("td", {}, fmt(it[c])))))));
}

// A transcript of up to OPEN_ALL calls shows every call; a longer one (a window dialogue makes 200) shows each call's
// header, and its prompt and answer once opened (built then: the page opens at once however long the transcript).
const OPEN_ALL = 12;

function callBody(c) {
  return [
    c.messages.map((m) => el("div", {}, el("div", { class: "role" }, m.role), el("pre", { class: "msg" }, m.content))),
    c.schema ? el("details", {}, el("summary", {}, "schema"), el("pre", {}, pretty(c.schema))) : null,
    el("div", { class: "role" }, "answer"), el("pre", { class: "answer" }, c.text === null ? "(not logged)" : c.text),
    c.parsed !== null && c.parsed !== undefined ? el("details", {}, el("summary", {}, "parsed"),
      el("pre", {}, pretty(c.parsed))) : null];
}

function renderCall(c, open) {
  const failed = c.error || c.parse_error;
  const meta = [c.step && "step " + c.step, c.retry ? "re-ask " + c.retry : null,
    c.prompt_tokens + " prompt / " + c.generated_tokens + " generated tokens",
    c.latency !== null ? c.latency.toFixed(3) + " s" : null, c.cached ? "cache hit" : null,
    c.repaired ? "repaired JSON" : null, c.sampling ? "sampling " + JSON.stringify(c.sampling) : null]
    .filter(Boolean).join(" · ");
  const body = el("div", { class: "call-body" });
  const fill = () => { if (!body.firstChild) body.append(...callBody(c).flat().filter(Boolean)); };
  if (open) fill();
  return el("section", { class: "call" + (failed ? " failed" : "") },
    el("details", { open: open ? "open" : null, ontoggle: (e) => { if (e.target.open) fill(); } },
      el("summary", {}, el("h3", {}, "call " + (c.seq + 1)), " ", el("span", { class: "meta" }, meta)), body),
    c.parse_error ? el("div", { class: "error parse-error" }, "parse error: " + c.parse_error) : null,
    c.error ? el("div", { class: "error call-error" }, "error: " + c.error) : null);
}

function renderCalls(calls, all = calls.length <= OPEN_ALL) {
  const nodes = calls.map((c) => renderCall(c, all));
  if (all) return nodes;
  const toggle = (open) => () => nodes.forEach((n) => { n.querySelector("details").open = open; });
  return [el("div", { class: "meta" }, calls.length + " calls, each opens on a click · ",
    el("button", { class: "open-calls", onclick: toggle(true) }, "open all"), " ",
    el("button", { class: "close-calls", onclick: toggle(false) }, "close all")), ...nodes];
}

// A run answered from the shared response cache made no model call for those: say how many of the calls were hits.
function cacheHits(calls) {
  const hits = calls.filter((c) => c.cached).length;
  return hits ? " (" + (hits === calls.length ? "all" : hits) + " answered by the response cache)" : "";
}

function renderSample(s) {
  const scores = Object.entries(s.scores || {}).map(([k, v]) => k + " " + fmt(v)).join(", ");
  return el("div", { class: "sample-view", "data-config": s.config },
    el("h3", {}, s.config),
    el("div", { class: "meta" }, "status ", el("span", { class: "status status-" + s.status }, s.status),
      scores ? " · " + scores : "", s.replica ? " · replica " + s.replica : "",
      " · " + s.calls.length + " calls", cacheHits(s.calls), s.attempts > 1 ? " · " + s.attempts + " attempts (latest shown)" : ""),
    s.reason ? el("div", { class: "error reason" }, s.reason) : null,
    ...s.sections.filter((x) => !x.side).map(renderSection),
    el("div", { class: "gold-pred" }, ...s.sections.filter((x) => x.side).map((x) => el("div", {},
      renderSection(x)))),
    renderItems(s.items),
    section("Transcript (" + s.calls.length + " calls)", s.prompts === false ?
      el("div", { class: "meta" }, "prompt logging was off for this run") : null, ...renderCalls(s.calls)),
    // the scorer's judge calls (its line in the eval log), below the solver's and closed: the scoring's evidence
    s.judge ? el("div", { class: "judge" }, section("Judge " + s.judge.model + " (" + s.judge.calls.length + " calls)",
      ...renderCalls(s.judge.calls, false))) : null);
}

async function viewSample(i, j, k) {
  const [index, s] = await Promise.all([load("index"), load("s/" + i + "/" + j)]);
  const others = index.configs.filter((c) => c.i !== i);
  const compare = el("select", { id: "compare", onchange: (e) => {
    location.hash = "#/s/" + i + "/" + j + (e.target.value === "" ? "" : "/" + e.target.value); } },
    el("option", { value: "" }, "compare with…"),
    others.map((c) => el("option", { value: c.i, selected: c.i === k ? "selected" : null }, c.label)));
  const cols = [el("div", { class: "col" }, renderSample(s))];
  if (k !== undefined) {
    const other = await load("c/" + k);
    const jj = other.rows.findIndex((r) => String(r.sample_id) === String(s.sample_id));
    cols.push(el("div", { class: "col" }, jj < 0 ? el("p", {}, "config " + other.label + " has no sample " +
      s.sample_id) : renderSample(await load("s/" + k + "/" + jj))));
  }
  show(el("h2", {}, el("a", { href: "#/c/" + i }, index.configs[i].label), " / sample ",
    el("span", { id: "sample-id" }, s.sample_id)), el("div", { class: "filters" }, compare),
    el("div", { class: "cols", id: "sample" }, cols));
}

// -- across runs (emocaustics view RUN_A RUN_B ...): groups of paired configs -> their samples -> one side by side --
function memberHead(m) {
  return [el("span", { class: "m-run" }, m.run), " · ", el("span", { class: "m-label" }, m.label),
    " · ", el("span", { class: "m-model" }, m.model || "no model")];
}

async function viewAcross(index) {
  const runs = index.runs.map((r) => el("tr", { class: "run" }, el("td", {}, r.name), el("td", {}, r.path),
    el("td", {}, r.models.join(", "))));
  const groups = index.groups.map((g) => el("tr", { class: "group", "data-g": g.g,
      onclick: () => { location.hash = "#/x/" + g.g; } },
    el("td", {}, el("a", { class: "group-link", href: "#/x/" + g.g }, g.task)),
    el("td", {}, g.members.map((m) => el("div", {}, memberHead(m)))), el("td", {}, g.samples),
    el("td", {}, g.shared)));
  show(el("h2", {}, "Runs"), el("table", { id: "runs" }, el("tr", {}, ["run", "folder", "models"].map((h) =>
    el("th", {}, h))), runs),
  el("h2", {}, "Configs paired across the runs"), el("table", { id: "groups" }, el("tr", {},
    ["task", "configs (run · label · model)", "samples", "in every run"].map((h) => el("th", {}, h))), groups));
}

// Which rows each filter keeps; `tol`: how far two scores may be apart and still agree.
const present = (r) => r.cells.filter((c) => c !== null);
function scoresDiffer(r, tol) {
  const s = present(r).map((c) => c.score).filter((v) => typeof v === "number");
  return s.length > 1 && Math.max(...s) - Math.min(...s) > tol;
}
const FILTERS = {
  "shared": (r) => !r.cells.includes(null),
  "runs disagree": (r, tol) => scoresDiffer(r, tol) || r.answers_differ,
  "scores differ": (r, tol) => scoresDiffer(r, tol),
  "answers differ": (r) => r.answers_differ,
  "one failed": (r) => present(r).some((c) => c.failed) && present(r).some((c) => !c.failed),
  "all failed": (r) => present(r).every((c) => c.failed),
  "missing in a run": (r) => r.cells.includes(null),
  "all": () => true,
};
const acrossState = {};

async function viewGroup(g) {
  const t = await load("x/" + g);
  const st = acrossState[g] || (acrossState[g] = { filter: "shared", tol: 0, q: "" });
  const tbody = el("tbody");
  const count = el("span", { id: "count" });
  const filter = el("select", { id: "filter", onchange: (e) => { st.filter = e.target.value; render(); } },
    Object.keys(FILTERS).map((f) => el("option", { value: f, selected: f === st.filter ? "selected" : null }, f)));
  const tol = el("input", { id: "tol", type: "number", step: "any", min: 0, size: 6, value: st.tol,
    title: "scores this far apart or less agree", oninput: (e) => { st.tol = Math.max(0, Number(e.target.value) || 0); render(); } });  // -1 would split equal scores
  const search = el("input", { id: "search", type: "search", placeholder: "sample id", size: 16, value: st.q,
    oninput: (e) => { st.q = e.target.value; render(); } });
  function render() {
    const rows = shownRows(t, st);
    count.textContent = rows.length + " of " + t.rows.length + " samples";
    tbody.replaceChildren(...rows.map(({ r, k }) => el("tr", { class: "sample", "data-id": r.sample_id,
        onclick: () => { location.hash = "#/x/" + g + "/" + k; } },
      el("td", {}, el("a", { href: "#/x/" + g + "/" + k }, r.sample_id)),
      r.cells.map((c) => c === null ? el("td", { class: "missing" }, "missing") :
        el("td", { class: "status-" + (c.failed ? "failed" : "ok"), title: c.reason || null },
          fmt(c.score), c.failed ? " (failed)" : "")))));
  }
  show(el("h2", {}, t.task, " across ", t.members.length, " configs"),
    el("div", { class: "filters" }, "show", filter, "tolerance", tol, search, count),
    el("table", { id: "across" }, el("thead", {}, el("tr", {}, el("th", {}, "sample_id"),
      t.members.map((m) => el("th", { class: "member" }, memberHead(m))))), tbody));
  render();
}

// The samples the group's list shows now (its filter and search), in its order: what previous / next walk through.
function shownRows(t, st) {
  return t.rows.map((r, k) => ({ r, k })).filter(({ r }) => FILTERS[st.filter](r, st.tol)
    && (!st.q || String(r.sample_id).includes(st.q)));
}

async function viewSideBySide(g, k) {
  const [d, t] = await Promise.all([load("x/" + g + "/" + k), load("x/" + g)]);
  const shown = shownRows(t, acrossState[g] || { filter: "shared", tol: 0, q: "" }).map(({ k }) => k);
  const at = shown.indexOf(k);
  const step = (n, text, id) => n >= 0 && n < shown.length && at >= 0
    ? el("a", { id, href: "#/x/" + g + "/" + shown[n] }, text) : null;
  const cols = d.members.map((m, n) => el("div", { class: "col member-col", "data-run": m.run },
    el("div", { class: "member-head" }, memberHead(m)),
    d.samples[n] === null ? el("p", { class: "missing" }, m.run + " has no sample " + d.sample_id)
      : renderSample(d.samples[n])));
  show(el("h2", {}, el("a", { href: "#/x/" + g }, "samples"), " / sample ", el("span", { id: "sample-id" },
    d.sample_id)), el("div", { class: "filters" }, step(at - 1, "← previous", "prev"), step(at + 1, "next →", "next"),
    at >= 0 ? el("span", { class: "meta" }, (at + 1) + " of " + shown.length + " shown") : null),
  el("div", { class: "cols", id: "sample" }, cols));
}

async function route() {
  document.body.dataset.ready = "";
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  try {
    const index = await load("index");
    document.getElementById("run").textContent = index.run;
    if (parts[0] === "x" && parts.length > 2) await viewSideBySide(Number(parts[1]), Number(parts[2]));
    else if (parts[0] === "x") await viewGroup(Number(parts[1]));
    else if (index.across) await viewAcross(index);
    else if (parts[0] === "c") await viewSamples(Number(parts[1]));
    else if (parts[0] === "s") await viewSample(Number(parts[1]), Number(parts[2]),
      parts[3] === undefined ? undefined : Number(parts[3]));
    else await viewConfigs();
    document.body.dataset.ready = location.hash || "#/";
  } catch (err) {
    show(el("p", { class: "error" }, String(err)));
    document.body.dataset.ready = "error";
  }
}

window.addEventListener("hashchange", route);
route();

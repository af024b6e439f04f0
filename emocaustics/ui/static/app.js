// The workbench page: forms that start jobs (the command line's verbs, run by the server), a job panel that polls
// the job's state and shows its results. No build step; the server's JSON API is described in ui/server.py.
"use strict";
const $ = (sel) => document.querySelector(sel);
let polling = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

async function api(path, options) {
  const response = await fetch(path, options);
  const doc = await response.json();
  if (!response.ok) throw new Error(doc.error || response.statusText);
  return doc;
}

function fail(err) {
  $("#error").textContent = err.message || String(err);
  document.body.dataset.error = $("#error").textContent;
}

async function upload(input) {  // the chosen files into one upload folder; the file's (or the folder's) reference
  let folder = null, ref = null;
  for (const file of input.files) {
    const q = new URLSearchParams({name: file.name});
    if (folder) q.set("folder", folder);
    const doc = await api("/api/upload?" + q, {method: "POST", body: file});
    folder = doc.folder; ref = doc.ref;
  }
  return input.files.length > 1 ? folder : ref;
}

async function start(form) {
  $("#error").textContent = "";
  delete document.body.dataset.error;
  try {
    const job = await api("/api/jobs", {method: "POST", headers: {"Content-Type": "application/json"},
                                         body: JSON.stringify(form)});
    follow(job);
  } catch (err) { fail(err); }
}

function follow(job) {
  if (polling) clearInterval(polling);
  show(job);
  if (job.state !== "running") return;
  polling = setInterval(async () => {
    try {
      const now = await api("/api/jobs/" + job.id);
      show(now);
      if (now.state !== "running") { clearInterval(polling); polling = null; }
    } catch (err) { fail(err); clearInterval(polling); }
  }, 400);
}

function table(rows) {
  if (!rows || !rows.length) return el("p", {}, "(none)");
  const cols = Object.keys(rows[0]);
  return el("table", {}, el("tr", {}, cols.map((c) => el("th", {}, c))),
            rows.map((r) => el("tr", {}, cols.map((c) => el("td", {}, fmt(r[c]))))));
}

function fmt(v) {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(4);
  if (v === null || v === undefined) return "";
  if (typeof v === "object") return JSON.stringify(v);
  const n = Number(v);
  return v !== "" && !Number.isNaN(n) && !Number.isInteger(n) ? n.toFixed(4) : String(v);
}

function keyValues(obj) {  // the scalars of a document as a two-column table
  const rows = Object.entries(obj).filter(([, v]) => v === null || typeof v !== "object");
  return rows.length ? el("table", {class: "figures"}, rows.map(([k, v]) => el("tr", {}, el("th", {}, k),
                                                                               el("td", {}, fmt(v))))) : null;
}

function blocks(doc) {  // a --json summary: its scalars, then each nested table or list of rows
  const out = [keyValues(doc)];
  for (const [k, v] of Object.entries(doc)) {
    if (!v || typeof v !== "object" || ["problems", "per_file", "detailed_results"].includes(k)) continue;
    if (Array.isArray(v)) {
      if (v.length && typeof v[0] === "object") out.push(el("h4", {}, k), table(v.slice(0, 200)));
      else if (v.length) out.push(el("h4", {}, k), el("p", {}, v.slice(0, 200).join(", ")));
    } else {
      const inner = Object.values(v);
      if (inner.length && inner.every((x) => x && typeof x === "object" && !Array.isArray(x)))
        out.push(el("h4", {}, k), table(Object.entries(v).map(([name, x]) => ({"": name, ...x}))));
      else if (inner.length) out.push(el("h4", {}, k), keyValues(v) || el("pre", {}, JSON.stringify(v, null, 1)));
    }
  }
  return out;
}

function problemText(p) {
  if (p.problem) return `${p.file}: ${p.problem}`;  // aer validate
  const where = [p.file, p.conversation !== null ? `conversation ${p.conversation}` : null,
                 p.pair !== null ? `pair ${p.pair} ${JSON.stringify(p.value)}` : null].filter((x) => x !== null);
  return `${where.join(", ")}: ${p.severity} ${p.kind}: ${p.message}`;  // ecpe validate
}

function stepView(job, step) {
  const box = el("div", {class: "step", "data-step": step.name},
                 el("h3", {}, `${step.name} `, el("code", {}, step.command)),
                 el("p", {}, step.status === null ? "not run" : `exit status ${step.status}`));
  const doc = step.json;
  if (doc && doc.problems && step.name === "validate") {
    const errors = doc.problems.filter((p) => !p.severity || p.severity === "error");
    box.append(el("p", {class: "verdict"}, doc.ok ? "valid" : `${errors.length} problem(s), every one listed:`),
               el("ul", {class: "problems"}, doc.problems.map((p) => el("li", {class: p.severity || "error"},
                                                                                problemText(p)))));
    if (doc.missing && doc.missing.length) box.append(el("p", {}, `missing (each scores 0): ${doc.missing.join(", ")}`));
  } else if (doc && typeof doc === "object") {
    box.append(el("div", {class: "summary"}, blocks(doc)));
    if (doc.problems && doc.problems.length)
      box.append(el("h4", {}, "warnings"), el("ul", {class: "notes"}, doc.problems.map((p) => el("li", {}, problemText(p)))));
  } else if (step.out) {
    box.append(el("pre", {}, step.out));
  }
  if (step.err.length) box.append(el("ul", {class: step.status > 0 && step.status !== 3 ? "problems" : "notes"},
                                     step.err.map((line) => el("li", {}, line))));
  return box;
}

function humanView(job) {
  const s = job.summary || {}, t = job.tables || {};
  if (job.kind === "human-replicate")
    return [el("h3", {}, "correlations between the runs"), keyValues(s) || "",
            el("h4", {}, "z-scores"), table(t.corr_zscore_r1r2), el("h4", {}, "raw scores"),
            table(t.corr_rawscore_r1r2)];
  const run = `/out/jobs/${job.id}/run/`;
  const agreement = Object.entries(s.rater_agreement || {}).map(([k, v]) => ({workers: k, ...v}));
  return [el("h3", {}, "system scores (passing workers)"), table(t.system_scores),
          el("h3", {}, "pass rates"), table(t.passrate), el("h3", {}, "durations (minutes)"), table(t.duration),
          el("h3", {}, "significance"), el("img", {class: "figure", src: run + "sig_test.png", alt: "significance"}),
          el("h3", {}, "rater agreement"), table(agreement),
          el("img", {class: "figure", src: run + "rater_agreement.png", alt: "rater agreement"})];
}

function show(job) {
  document.body.dataset.job = job.id;
  document.body.dataset.state = job.state;
  const head = el("h2", {}, job.title, " ", el("span", {class: "state " + job.state, id: "job-state"}, job.state));
  const box = el("div", {}, head, el("p", {}, `job ${job.id}, ${job.elapsed.toFixed(1)} s`,
                                     job.running ? `, running: ${job.running}` : ""));
  if (job.state === "running") {
    const cancel = el("button", {id: "cancel"}, "cancel");
    cancel.onclick = async () => { try { show(await api(`/api/jobs/${job.id}/cancel`, {method: "POST"})); }
                                   catch (err) { fail(err); } };
    box.append(cancel, el("pre", {id: "log"}, job.log.join("\n") || "starting ..."));
  } else {
    if (job.kind.startsWith("human-") && job.state === "done") box.append(...humanView(job));
    box.append(...job.steps.map((step) => stepView(job, step)));
    box.append(el("h3", {}, "files written"),
               el("ul", {class: "files"}, job.files.map((f) => el("li", {}, el("a", {href: "/out/" + f.slice(4),
                                                                                   target: "_blank"}, f)))));
    if (job.kind === "human-process" && job.state === "done")
      $("#processed").append(el("option", {value: `out:jobs/${job.id}/run`}));
  }
  $("#job").replaceChildren(box);
}

function tab() {
  const name = (location.hash || "#human").slice(1);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.dataset.tab === name);
  for (const s of document.querySelectorAll("section.form")) s.classList.toggle("on", s.id === "tab-" + name);
}

async function openRun(run) {
  try {
    const doc = await api("/api/view", {method: "POST", body: JSON.stringify({run})});
    document.body.dataset.viewer = doc.url;
    window.open(doc.url);
  }
  catch (err) { fail(err); }
}

async function init() {
  const state = await api("/api/state");
  $("#root").textContent = state.root;
  $("#out").textContent = state.out;
  for (const t of state.tasks) $("#task").append(el("option", {value: t}, t));
  for (const s of state.splits) $("#split").append(el("option", {value: s}, s));
  for (const s of state.subsets) $("#subset").append(el("option", {value: s}, s));
  for (const p of state.predictors) $("#predictors").append(el("option", {value: p}));
  for (const r of state.rounds) $("#judge-round").append(el("option", {value: r}, r));
  $("#split").value = "dev";
  $("#runs").replaceChildren(...state.runs.map((run) => {
    const button = el("button", {"data-run": run}, "open in the viewer");
    button.onclick = () => openRun(run);
    return el("li", {}, el("code", {}, run), " ", button);
  }));
  if (!state.runs.length) $("#runs").append(el("li", {}, "no run folder (a folder holding evallog/) under the root"));
  $("#process-go").onclick = async () => {
    try {
      const hits = (await upload($("#hits-file"))) || $("#hits-path").value;
      const metadata = (await upload($("#meta-file"))) || $("#meta-path").value;
      start({kind: "human-process", hits, metadata, ranking: $("#ranking").value, qc_threshold: $("#qc").value});
    } catch (err) { fail(err); }
  };
  $("#replicate-go").onclick = () => start({kind: "human-replicate", run1: $("#run1").value, run2: $("#run2").value});
  $("#judge-go").onclick = () => start({kind: "dialogue-judge", model: $("#judge-model").value,
                                        round: $("#judge-round").value, data: $("#judge-data").value,
                                        limit: $("#judge-limit").value});
  $("#score-go").onclick = async () => {
    try {
      const pred = (await upload($("#pred-file"))) || $("#pred-path").value;
      start({kind: "submission", task: $("#task").value, pred, data: $("#data-path").value,
             split: $("#split").value, subset: $("#subset").value});
    } catch (err) { fail(err); }
  };
  window.onhashchange = tab;
  tab();
  document.body.dataset.ready = "1";
}

init().catch(fail);

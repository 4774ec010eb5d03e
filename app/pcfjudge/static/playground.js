// The playground form: candidates, settings, the API key, and one request to /judge/listwise or /judge/pairwise.
import { EXAMPLES } from "./examples.js";
import {
  consensusRows, h, renderConsensusTable, renderError, renderHeatmap, renderJury, renderPairwise, renderVerdicts,
} from "./render.js";

const KEY_STORAGE = "pcfjudge.apiKey";
const $ = (id) => document.getElementById(id);
const list = $("candidates");
let defaultModel = null; // the service's default judge (GET /info's model_id); null while unknown
let juries = new Map(); // this service's juries (PCFJ_JURIES): name → jurors, from GET playground/models

const isSimulated = (model) => typeof model === "string" && model.startsWith("sim:");

function authHeaders() {
  const key = sessionStorage.getItem(KEY_STORAGE);
  return key ? { authorization: `Bearer ${key}` } : {};
}

// The default judge, from TEI's model-info route (it needs the key when the service does): null when unknown.
async function fetchDefaultModel() {
  try {
    const response = await fetch("info", { headers: { accept: "application/json", ...authHeaders() } });
    if (!response.ok) return null;
    const info = await response.json();
    return typeof info.model_id === "string" ? info.model_id : null;
  } catch {
    return null;
  }
}

// This service's juries, offered in the model picker (it needs the key when the service does): none when unknown.
async function fetchJuries() {
  try {
    const response = await fetch("playground/models", { headers: { accept: "application/json", ...authHeaders() } });
    if (!response.ok) return new Map();
    const data = await response.json();
    return new Map((data.juries ?? []).map((j) => [j.name, j.jurors]));
  } catch {
    return new Map();
  }
}

function offerJuries() {
  const picker = $("model-suggestions");
  picker.querySelectorAll("option[data-jury]").forEach((o) => o.remove());
  for (const [name, jurors] of juries) {
    picker.append(h("option", { value: name, label: `jury: ${jurors.join(", ")}`, dataset: { jury: name } }));
  }
}

// The models a model field names: a configured jury's jurors, a comma-separated list's, or the one model.
function jurorsOf(model) {
  if (juries.has(model)) return juries.get(model);
  return model.split(",").map((m) => m.trim()).filter(Boolean);
}

// Said before anything is judged: a simulated judge's verdicts are draws, not readings of the answers.
function showSimulatedNote() {
  const note = $("sim-note");
  note.hidden = !isSimulated(defaultModel);
  if (note.hidden) return;
  note.replaceChildren(
    h("strong", {}, `This service's default judge is simulated (${defaultModel}).`),
    " Its verdicts are seeded draws from a hash of each answer, not a reading of it, so it can rank a right answer last.",
    " The built-in examples use the simulated oracle (sim:oracle) instead: it is told the truly best answer and still",
    " misjudges about one direct verdict in seven (with 4 candidates), as a good real judge does, so they show how",
    " permutation consensus works. For real verdicts, start the service with OPENAI_API_KEY or ANTHROPIC_API_KEY",
    " (or PCFJ_DEFAULT_MODEL) set.",
  );
}

const takesOracle = (model) => jurorsOf(model).includes("sim:oracle"); // alone or as a juror

function updateOracle() {
  $("oracle-row").hidden = !takesOracle($("model").value.trim());
}

function candidateRows() {
  return [...list.querySelectorAll("li")];
}

function freshId() {
  const taken = new Set(candidateRows().map((li) => li.querySelector(".cand-id").value));
  const letters = "abcdefghijklmnopqrstuvwxyz".split("");
  return letters.find((c) => !taken.has(c)) ?? String(taken.size);
}

function addCandidate(id = freshId(), text = "") {
  const remove = h("button", { type: "button", className: "remove", "aria-label": "remove candidate", title: "remove" }, "×");
  const li = h(
    "li",
    {},
    h("input", { className: "cand-id", "aria-label": "candidate id", value: id, spellcheck: "false" }),
    h("textarea", { className: "cand-text", "aria-label": "candidate answer", rows: 2, placeholder: "A candidate answer" }),
  );
  li.querySelector("textarea").value = text;
  li.append(remove);
  remove.addEventListener("click", () => {
    li.remove();
    updateCandidates();
  });
  list.append(li);
  updateCandidates();
  return li;
}

function updateCandidates() {
  const rows = candidateRows();
  $("candidate-count").textContent = `${rows.length} (the service takes 2–10,000 by default; past 16, in rounds of windows)`;
  rows.forEach((li) => { li.querySelector(".remove").hidden = rows.length <= 1; });
  const pairwise = $("pairwise");
  pairwise.disabled = rows.length !== 2;
  if (pairwise.disabled) pairwise.checked = false;
  updateSettings();
}

function updateSettings() {
  const pairwise = $("pairwise").checked;
  for (const id of ["k", "seed", "mode", "weights"]) $(id).disabled = pairwise;
  $("submit").textContent = pairwise ? "Judge the pair (APOCJudge)" : "Judge (PCFJudge)";
}

function loadExample(example) {
  $("question").value = example.question;
  list.replaceChildren();
  for (const [id, text] of example.candidates) addCandidate(id, text);
  if (example.k !== undefined) $("k").value = example.k;
  $("pairwise").checked = Boolean(example.pairwise) && !$("pairwise").disabled;
  if (isSimulated(defaultModel) && example.oracle !== undefined) {
    $("model").value = "sim:oracle"; // the simulated oracle, told the truly best answer (see examples.js)
    $("oracle-best").value = example.oracle;
  }
  updateOracle();
  updateSettings();
}

// A number field: omitted when empty (the service default applies), otherwise sent as typed so that the service,
// not the page, says what is wrong with it.
function numberField(id) {
  const raw = $(id).value.trim();
  if (raw === "") return undefined;
  const value = Number(raw);
  return Number.isFinite(value) ? value : raw;
}

function candidates() {
  return candidateRows().map((li) => ({ id: li.querySelector(".cand-id").value, text: li.querySelector(".cand-text").value }));
}

function requestFor(cands) {
  const model = $("model").value.trim() || undefined;
  const question = $("question").value;
  // sim:oracle only (alone or in a jury): the truly best answer, sent as typed (the service says what is wrong with it)
  const oracle = model && takesOracle(model) ? $("oracle-best").value.trim() || undefined : undefined;
  if ($("pairwise").checked) {
    const side = oracle === cands[0].id ? "A" : oracle === cands[1].id ? "B" : oracle;
    const body = { question, response_a: cands[0].text, response_b: cands[1].text, model, oracle_best: side };
    return ["judge/pairwise", body];
  }
  const body = {
    question, candidates: cands, model, k: numberField("k"), seed: numberField("seed"),
    mode: $("mode").value, weights: $("weights").value, include_runs: true, oracle_best: oracle,
  };
  return ["judge/listwise", body];
}

async function post(path, body) {
  const headers = { "content-type": "application/json", accept: "application/json", ...authHeaders() };
  const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try { data = JSON.parse(text); } catch { data = null; }
  return { response, data, text };
}

// "stream": true: server-sent events, read from the response body as they arrive (fetch, so the key header goes too).
async function postStream(path, body, onEvent) {
  const headers = { "content-type": "application/json", accept: "text/event-stream", ...authHeaders() };
  const response = await fetch(path, { method: "POST", headers, body: JSON.stringify({ ...body, stream: true }) });
  if (!response.ok || !(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
    const text = await response.text();
    let data = null;
    try { data = JSON.parse(text); } catch { data = null; }
    return { response, data, text };
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let final = null;
  // The latest stream's events, for scripts driving the page (the browser tests read it: a streamed body is not kept).
  const seen = (window.pcfjudgeStream = []);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let kind = "message";
      const lines = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) kind = line.slice(6).trim();
        else if (line.startsWith("data:")) lines.push(line.slice(5).trim());
      }
      if (!lines.length) continue; // a keep-alive ping
      const data = JSON.parse(lines.join("\n"));
      seen.push([kind, data]);
      if (kind === "result" || kind === "error") final = { kind, data };
      else onEvent(kind, data);
    }
  }
  if (final && final.kind === "result") return { response, data: final.data, text: "" };
  const error = final ? final.data : { error: "stream_ended", detail: "the stream ended without a result" };
  return { response: { ok: false, status: error.status || 502, headers: response.headers }, data: error, text: "" };
}

// One streamed run (or pass): where the consensus stands, candidates by their consensus so far.
function showProgress(kind, data, cands) {
  $("live").hidden = false;
  if (kind === "pass") {
    $("live-status").textContent = `${data.pass} pass: ${data.error ? `failed (${data.error})` : `verdict ${data.verdict}`}${data.model ? ` — ${data.model}` : ""}`;
    return;
  }
  const by = data.model ? ` by ${data.model}` : "";
  const winners = (data.winners || []).join(", ");
  $("live-status").textContent = `Run ${data.runs_done} of ${data.runs_planned}${by}${data.error ? " failed" : ""}; leading: ${winners || "—"}`;
  const consensus = data.consensus || {};
  const texts = new Map(cands.map((c) => [c.id, c.text]));
  const rows = Object.entries(consensus).sort((a, b) => b[1] - a[1]).map(([id, value]) => {
    const fill = h("span", { className: "fill" });
    fill.style.width = `${Math.max(0, Math.min(100, value))}%`; // CSSOM: allowed by the page's style-src 'self'
    return h("tr", { className: (data.winners || []).includes(id) ? "leading" : "", dataset: { id } },
      h("td", {}, `${id}: ${(texts.get(id) || "").slice(0, 60)}`),
      h("td", { className: "num" }, value.toFixed(1)),
      h("td", { className: "bar" }, fill));
  });
  $("live-table").querySelector("tbody").replaceChildren(...rows);
}

function show(section) {
  for (const id of ["listwise-result", "pairwise-result"]) $(id).hidden = id !== section;
  if (!section) $("jury-result").hidden = true;
  if (section) $("error").hidden = true;
}

// The jury block, moved under the verdicts of either result (hidden for one judge).
function showJury(data, pairwise, name) {
  const section = $("jury-result");
  $(pairwise ? "pairwise-result" : "listwise-result").querySelector(".verdicts").after(section);
  section.hidden = !data.jury;
  if (data.jury) renderJury({ summary: $("jury-summary"), table: $("jury-table") }, data.jury, pairwise, name);
}

function showListwise(data, cands) {
  const texts = new Map(cands.map((c) => [c.id, c.text]));
  renderVerdicts({ consensus: $("consensus-verdict"), direct: $("direct-verdict"), diagnostics: $("diagnostics") }, data, texts);
  renderConsensusTable($("consensus-table"), consensusRows(data, texts));
  renderHeatmap($("heatmap"), $("legend"), data);
  show("listwise-result");
  showJury(data, false);
}

function showPairwise(data, cands) {
  const ids = { A: cands[0].id || "A", B: cands[1].id || "B" };
  renderPairwise({ verdict: $("pairwise-verdict"), diagnostics: $("pairwise-diagnostics"), passes: $("passes") }, data, ids);
  show("pairwise-result");
  showJury(data, true, (v) => (v === "A" || v === "B" ? `${v} (${ids[v]})` : v));
}

async function submit(event) {
  event.preventDefault();
  const cands = candidates();
  const [path, body] = requestFor(cands);
  const button = $("submit");
  button.disabled = true;
  $("error").hidden = true;
  $("status").textContent = `Judging ${cands.length} candidates…`;
  const started = performance.now();
  try {
    $("live").hidden = true;
    const { response, data, text } = await postStream(path, body, (kind, event) => showProgress(kind, event, cands));
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    if (response.ok && data) {
      (path === "judge/pairwise" ? showPairwise : showListwise)(data, cands);
      const models = data.jury ? data.jury.jurors.map((j) => j.model) : [data.model];
      const simulated = models.some(isSimulated)
        ? h("span", { className: "simulated", id: "simulated-verdict" },
          data.jury
            ? ` Simulated juror(s) ${models.filter(isSimulated).join(", ")}: their verdicts are seeded draws, not a reading of the answers.`
            : ` Simulated judge: its verdicts are seeded draws, not a reading of the answers.`)
        : null;
      const by = data.jury ? `the jury ${data.jury.name} (${models.join(", ")})` : data.model;
      $("status").replaceChildren(`Judged in ${seconds} s by ${by}.`, ...(simulated ? [simulated] : []));
    } else {
      show(null);
      renderError($("error"), { status: response.status, data, text: text.slice(0, 500), retryAfter: response.headers.get("retry-after") });
      $("status").textContent = `The service answered ${response.status} after ${seconds} s.`;
    }
  } catch (error) {
    show(null);
    renderError($("error"), { status: 0, data: null, text: `could not reach the service: ${error.message}` });
    $("status").textContent = "";
  } finally {
    button.disabled = false;
  }
}

async function init() {
  [defaultModel, juries] = await Promise.all([fetchDefaultModel(), fetchJuries()]);
  showSimulatedNote();
  offerJuries();
  const select = $("example");
  EXAMPLES.forEach((example, i) => select.append(h("option", { value: i }, example.name)));
  select.addEventListener("change", () => {
    if (select.value !== "") loadExample(EXAMPLES[Number(select.value)]);
  });
  const key = $("api-key");
  key.value = sessionStorage.getItem(KEY_STORAGE) ?? "";
  key.addEventListener("input", () => {
    if (key.value) sessionStorage.setItem(KEY_STORAGE, key.value);
    else sessionStorage.removeItem(KEY_STORAGE);
  });
  key.addEventListener("change", async () => { // with the key, /info may now say which judge this is
    defaultModel = await fetchDefaultModel();
    showSimulatedNote();
    juries = await fetchJuries();
    offerJuries();
    updateOracle();
  });
  $("model").addEventListener("input", updateOracle);
  $("add-candidate").addEventListener("click", () => addCandidate().querySelector("textarea").focus());
  $("pairwise").addEventListener("change", updateSettings);
  $("judge-form").addEventListener("submit", submit);
  select.value = "0";
  loadExample(EXAMPLES[0]);
  document.body.dataset.ready = "true";
}

init();

// Rendering of the service's answers. Every string from the service or the user is inserted as text, never as HTML.

export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "className") node.className = value;
    else if (key === "dataset") {
      for (const [name, v] of Object.entries(value)) if (v !== undefined && v !== null) node.dataset[name] = v;
    }
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const fixed = (digits) => (x) => (typeof x === "number" ? x.toFixed(digits) : "–");
const pct = (x) => (typeof x === "number" ? `${Math.round(x * 100)}%` : "–");
const yesNo = (x) => (x === null || x === undefined ? "–" : x ? "yes" : "no");

// Viridis (perceptually uniform, readable with colour-blindness): score 0 → dark purple, 100 → yellow.
const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

export function scoreColour(score) {
  const t = Math.min(1, Math.max(0, score / 100));
  const pos = t * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(pos));
  const f = pos - i;
  const rgb = STOPS[i].map((c, j) => Math.round(c + f * (STOPS[i + 1][j] - c)));
  return { background: `rgb(${rgb.join(", ")})`, text: t > 0.6 ? "#111" : "#fff" };
}

function fill(container, ...children) {
  container.replaceChildren(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return container;
}

function describe(dl, pairs) {
  fill(dl, ...pairs.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
}

// ── errors ────────────────────────────────────────────────────────────────────────────────────────────────────────

export function renderError(box, { status, data, text, retryAfter }) {
  const kind = data && typeof data.error === "string" ? data.error : status ? "error" : "network_error";
  const detail = data && typeof data.detail === "string" ? data.detail : text || "no answer from the service";
  const fields = data && Array.isArray(data.errors) && data.errors.length > 1 ? data.errors : [];
  fill(
    box,
    h("strong", {}, status ? `${status} ${kind}` : kind),
    h("p", { className: "detail" }, detail),
    fields.length ? h("ul", {}, fields.map((e) => h("li", {}, `${e.field}: ${e.message}`))) : null,
    retryAfter ? h("p", {}, `Retry after ${retryAfter} s.`) : null,
    data && data.request_id ? h("p", { className: "hint" }, `request id ${data.request_id}`) : null,
  );
  box.hidden = false;
}

// ── listwise ──────────────────────────────────────────────────────────────────────────────────────────────────────

const COLUMNS = [
  { key: "rank", label: "#", numeric: true, ascending: true },
  { key: "id", label: "candidate" },
  { key: "consensus", label: "consensus", numeric: true, format: fixed(2) },
  { key: "mean_score", label: "mean score", numeric: true, format: fixed(2) },
  { key: "borda", label: "Borda", numeric: true, format: fixed(1) },
  { key: "top_vote", label: "top vote", numeric: true, format: pct },
  { key: "uncertainty", label: "uncertainty", numeric: true, format: pct },
  { key: "major_error", label: "major error", numeric: true, format: pct, flag: true },
  { key: "hallucinated_specificity", label: "hallucinated specificity", numeric: true, format: pct, flag: true },
  // past one window (rounds of windows): the fitted consensus's standard error and the windows each candidate was in
  { key: "standard_error", label: "± s.e.", numeric: true, format: fixed(1), windowed: true },
  { key: "appearances", label: "windows", numeric: true, windowed: true },
  { key: "text", label: "answer" },
];

export function consensusRows(result, texts) {
  const winners = new Set(result.winners);
  return result.candidates.map((c) => ({
    ...c,
    rank: result.ranking.indexOf(c.id) + 1,
    text: texts.get(c.id) ?? "",
    winner: winners.has(c.id),
  }));
}

export function renderConsensusTable(table, rows, sort = { key: "rank", descending: false }) {
  const windowed = rows.some((r) => typeof r.appearances === "number");
  const columns = COLUMNS.filter((c) => windowed || !c.windowed);
  const column = columns.find((c) => c.key === sort.key) ?? columns[0];
  const sign = sort.descending ? -1 : 1;
  const sorted = [...rows].sort((a, b) => {
    const x = a[column.key];
    const y = b[column.key];
    const order = column.numeric ? x - y : String(x).localeCompare(String(y));
    return sign * order || a.rank - b.rank;
  });
  const header = columns.map((c) => {
    const current = c.key === column.key;
    const button = h("button", { type: "button", dataset: { key: c.key } }, c.label, current ? (sort.descending ? " ▼" : " ▲") : "");
    button.addEventListener("click", () => {
      const descending = current ? !sort.descending : c.numeric && !c.ascending;
      renderConsensusTable(table, rows, { key: c.key, descending });
    });
    return h("th", { scope: "col", "aria-sort": current ? (sort.descending ? "descending" : "ascending") : "none" }, button);
  });
  fill(table.tHead, h("tr", {}, header));
  fill(
    table.tBodies[0],
    ...sorted.map((row) =>
      h(
        "tr",
        { className: row.winner ? "winner" : "", dataset: { id: row.id } },
        columns.map((c) => {
          if (c.key === "id") return h("th", { scope: "row" }, row.winner ? "★ " : "", row.id);
          if (c.key === "text") return h("td", { className: "answer", title: row.text }, row.text);
          const value = row[c.key];
          const flagged = c.flag && value > 0;
          return h("td", { className: flagged ? "num flag" : "num" }, c.format ? c.format(value) : value);
        }),
      ),
    ),
  );
}

function runLabel(run, result) {
  const juror = run.model ? h("small", { className: "juror" }, run.model) : null; // a jury's run: the juror that made it
  if (result.diagnostics.windows) return [juror, `step ${run.execution + 1} · window ${run.index + 1}`];
  const base = result.executions > 1 ? `exec ${run.execution} · run ${run.index}` : `run ${run.index}`;
  return run.execution === 0 && run.index === 0 ? [juror, base, h("small", {}, "direct")] : [juror, base];
}

function heatCell(id, judgment, top) {
  const colour = scoreColour(judgment.score);
  const flags = [judgment.major_error && "major error", judgment.hallucinated_specificity && "hallucinated specificity"]
    .filter(Boolean);
  const title = `${id}: score ${judgment.score}, rank ${judgment.rank}${flags.length ? `, ${flags.join(", ")}` : ""}` +
    (judgment.rationale ? `\n${judgment.rationale}` : "");
  const cell = h(
    "td",
    { className: top ? "cell top" : "cell", title, dataset: { id, score: judgment.score } },
    h("span", { className: "cid" }, id, flags.length ? " ⚑" : ""),
    h("span", { className: "score" }, fixed(0)(judgment.score)),
  );
  cell.style.setProperty("background-color", colour.background);
  cell.style.setProperty("color", colour.text);
  return cell;
}

export function renderHeatmap(table, legend, result) {
  const runs = result.runs ?? [];
  const n = Math.max(0, ...runs.map((run) => run.order.length)); // a window of a larger request shows at most a window
  fill(table.tHead, h("tr", {}, h("th", { scope: "col" }, "order"), [...Array(n).keys()].map((i) => h("th", { scope: "col" }, `shown ${i + 1}`))));
  fill(
    table.tBodies[0],
    ...runs.map((run) => {
      const label = h("th", { scope: "row" }, runLabel(run, result), run.cached ? h("small", {}, "cached") : null);
      if (run.error || !run.judgments) {
        return h("tr", { className: "failed", dataset: { run: run.index, model: run.model } }, label, h("td", { colspan: n }, `failed: ${run.error ?? "no judgments"}`));
      }
      const top = new Set(run.top_set ?? []);
      const cells = run.order.map((id) => heatCell(id, run.judgments[id], top.has(id)));
      const pad = n > run.order.length ? h("td", { colspan: n - run.order.length, className: "pad" }) : null;
      return h("tr", { dataset: { run: run.index, model: run.model } }, label, cells, pad);
    }),
  );
  const bar = h("span", { className: "bar" });
  bar.style.setProperty("background", `linear-gradient(to right, ${[0, 25, 50, 75, 100].map((s) => scoreColour(s).background).join(", ")})`);
  fill(
    legend, "score 0 ", bar, " 100", h("span", { className: "cell top sample" }, "outlined"), "= the run's top pick",
    h("span", { className: "gap" }, "⚑"), "= flagged a major error or hallucinated specificity",
  );
}

function kText(result) {
  const d = result.diagnostics;
  const w = d.windows;
  if (w) {
    return `${w.rounds} rounds of ${w.windows_per_round} windows (at most ${w.window} candidates each): ` +
      `${w.windows_judged} windows judged in ${w.steps} steps, stopped: ${w.stopped}`;
  }
  const parts = [String(result.k)];
  if (d.k_capped) parts.push(`(asked ${d.k_requested}, capped at n!)`);
  if (d.stopped) parts.push(`· ${d.runs_made} runs made, stopped: ${d.stopped}`);
  return parts.join(" ");
}

export function renderVerdicts(parts, result, texts) {
  const d = result.diagnostics;
  const direct = d.direct_winners;
  const same = direct && direct.length === result.winners.length && direct.every((id) => result.winners.includes(id));
  const winnerText = (ids) => ids.map((id) => texts.get(id)).filter(Boolean).join(" / ");
  fill(
    parts.consensus,
    h("h3", {}, result.mode === "consensus" ? "Consensus (PCFJudge)" : `Verdict (${result.mode})`),
    h("p", { className: "big", id: "consensus-winners" }, result.winners.join(", ")),
    h("p", { className: "quote" }, winnerText(result.winners)),
    h("p", { className: "hint" }, `ranking ${result.ranking.join(" › ")}`),
  );
  if (d.windows) {
    fill(
      parts.direct,
      h("h3", {}, "Past one prompt"),
      h("p", { id: "direct-winners" }, `${result.candidates.length} candidates, more than one prompt's ${d.windows.window}: ` +
        "judged in rounds of windows, each candidate in several with other neighbours, fitted onto one scale " +
        "(no single direct verdict covers them all)."),
    );
  } else {
    fill(
      parts.direct,
      h("h3", {}, "Direct judge (run 0, canonical order)"),
      h("p", { className: "big", id: "direct-winners" }, direct ? direct.join(", ") : "run 0 failed"),
      h("p", { className: "quote" }, direct ? winnerText(direct) : ""),
      h("p", { className: same ? "agree" : "differs" }, same ? "agrees with the consensus" : "differs from the consensus"),
    );
  }
  const u = result.usage;
  describe(parts.diagnostics, [
    ["order sensitive", yesNo(d.order_sensitive)],
    ["agreement", `${pct(d.agreement)} of ${d.windows ? "windows showing a winner" : "runs"} pick a consensus winner`],
    ["runs", `${d.runs_ok} ok, ${d.runs_failed} failed (quorum ${d.quorum})${result.degraded ? " · degraded" : ""}`],
    [d.windows ? "windows" : "K", kText(result)],
    ["model", `${result.model} · ${result.mode} · ${result.prompt_version}`],
    ["usage", `${u.backend_calls} calls, ${u.cache_hits} cache hits, ${u.input_tokens + u.output_tokens} tokens`],
  ]);
}

// ── pairwise ──────────────────────────────────────────────────────────────────────────────────────────────────────

const DECISIONS = {
  consistent: "both orders agree",
  override_confirmed: "the orders disagree; the keyed pass confirmed the swapped verdict",
  override_rejected: "the orders disagree; the keyed pass did not confirm, so the direct verdict stands",
  keyed_skipped_estimation: "the orders disagree; estimation-style question, so the direct verdict stands",
  keyed_disabled: "the orders disagree; keyed pass off, so the direct verdict stands",
  keyed_failed: "the orders disagree; the keyed pass failed, so the direct verdict stands",
  direct_only: "the swapped pass failed: direct verdict only",
  swapped_only: "the direct pass failed: swapped verdict only",
};

export function renderPairwise(parts, result, ids) {
  const name = (v) => (v === "A" || v === "B" ? `${v} (${ids[v]})` : v ?? "–");
  fill(
    parts.verdict,
    h("h3", {}, "APOCJudge verdict"),
    h("p", { className: "big", id: "pairwise-winner" }, name(result.winner)),
    h("p", {}, result.label, " · ", result.decision),
    h("p", { className: "hint" }, DECISIONS[result.decision] ?? ""),
  );
  const keyed = result.keyed;
  describe(parts.diagnostics, [
    ["direct (A first)", name(result.direct)],
    ["swapped (B first)", name(result.swapped)],
    ["order consistent", yesNo(result.order_consistent)],
    ["override", yesNo(result.override)],
    ["keyed pass", keyed.ran ? `ran: ${name(keyed.winner)}${keyed.error ? ` (${keyed.error})` : ""}` : keyed.skipped ? `skipped (${keyed.skipped})` : "not needed"],
    ["preference for A", result.preference_a === null ? "–" : fixed(3)(result.preference_a)],
    ["model", `${result.model} · ${result.usage.backend_calls} calls, ${result.usage.cache_hits} cache hits`],
  ]);
  const jury = (result.runs ?? []).some((p) => p.model); // a jury's passes: each names its juror
  const head = [...(jury ? ["juror"] : []), "pass", "shown first", "verdict", "judge said", "rationale", "cached", "ms", "error"];
  fill(parts.passes.tHead, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c))));
  fill(
    parts.passes.tBodies[0],
    ...(result.runs ?? []).map((p) =>
      h(
        "tr",
        { className: p.error ? "failed" : "", dataset: { model: p.model } },
        jury ? h("td", { className: "juror" }, p.model ?? "") : null,
        h("th", { scope: "row" }, p.pass),
        h("td", {}, name(p.order[0])),
        h("td", {}, name(p.verdict)),
        h("td", {}, p.raw_verdict ?? "–"),
        h("td", { className: "answer", title: p.rationale ?? "" }, p.resolved_answer ? `${p.rationale ?? ""} [own answer: ${p.resolved_answer}]` : p.rationale ?? ""),
        h("td", {}, yesNo(p.cached)),
        h("td", { className: "num" }, fixed(1)(p.latency_ms)),
        h("td", {}, p.error ?? ""),
      ),
    ),
  );
}

// ── jury ──────────────────────────────────────────────────────────────────────────────────────────────────────────

// A jury's block (the response's `jury`): how it pooled and agreed, then one row per juror. `name` shows a pairwise
// verdict as "A (id)"; listwise winners are candidate ids already.
export function renderJury(parts, jury, pairwise, name = (v) => v) {
  const failed = jury.jurors.filter((j) => !j.delivered);
  const agreement = pairwise
    ? ["Fleiss' κ", jury.fleiss_kappa === null ? "– (fewer than two jurors judged both orders)" : fixed(3)(jury.fleiss_kappa)]
    : ["Kendall's W", jury.kendalls_w === null ? "– (fewer than two jurors delivered)" : fixed(3)(jury.kendalls_w)];
  describe(parts.summary, [
    ["jury", `${jury.name} · ${jury.jurors.length} jurors`],
    ["weights", jury.weights === "calibrated" ? "calibrated (log-odds of measured accuracy)" : "equal"],
    ["quorum", `${jury.quorum} of ${jury.jurors.length} jurors must deliver`],
    agreement,
    ["effective jurors", jury.effective_jurors === null ? "– (error correlation not measured)" : fixed(2)(jury.effective_jurors)],
    ["degraded", failed.length ? `yes: ${failed.map((j) => j.model).join(", ")} did not deliver` : "no"],
  ]);
  const head = ["juror", "weight", pairwise ? "verdict" : "winners", pairwise ? "decision" : "agreement (ρ)", "agrees with the jury", "runs ok", "calls", "error"];
  fill(parts.table.tHead, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c))));
  fill(
    parts.table.tBodies[0],
    ...jury.jurors.map((j) =>
      h(
        "tr",
        { className: j.delivered ? (j.agrees ? "agrees" : "") : "failed", dataset: { model: j.model } },
        h("th", { scope: "row" }, j.model),
        h("td", { className: "num" }, fixed(2)(j.weight)),
        h("td", { className: "winners" }, j.winners ? j.winners.map(name).join(", ") : "–"),
        h("td", { className: pairwise ? "" : "num" }, pairwise ? j.decision ?? "–" : fixed(2)(j.agreement)),
        h("td", {}, yesNo(j.agrees)),
        h("td", { className: "num" }, `${j.runs_ok} / ${j.runs}`),
        h("td", { className: "num" }, `${j.backend_calls} (${j.cache_hits} cached)`),
        h("td", {}, j.delivered ? "" : `${j.status ? `${j.status} ` : ""}${j.error ?? "did not deliver"}`),
      ),
    ),
  );
}

/*
 * The dashboard of `fastldp serve` (fastldp.service): plain JavaScript and SVG,
 * no library and no asset from elsewhere.
 *
 * It polls the collector's public endpoints about once a second:
 *   GET /v1/mechanism  once (again until it answers): parameters, privacy guarantee;
 *   GET /v1/stats      every tick: report count, rate, history, refusals, latency;
 *   GET /v1/estimate   when the count or the last update time changed.
 * The estimate is drawn by the mechanism's kind (fastldp.protocol.KINDS): the
 * top items with error bars for "counts" and "ranking" (estimate +- 1.96 std, a
 * normal 95% interval), a heat map for "matrix" (any 2-D estimate), the
 * coordinates for "vector" (RPC's mean vector) and "distribution".
 *
 * Every number shown carries a data-testid, and data-value holds it at full
 * precision: String(x) of the JSON double, its shortest round-trip decimal,
 * so that float(data-value) in Python is the very double /v1/estimate sent
 * ("nan" stands for null, a value that is not finite).
 */
"use strict";

(function () {
  const POLL_MS = 1000;
  const TOP_K = 20;          // items shown for an oracle, cells listed for a matrix
  const VECTOR_ROWS = 64;    // entries listed for a mean vector
  const Z = 1.96;            // error bars: estimate +- Z * std
  const MAX_SVG_CELLS = 16384; // a larger matrix is painted as an image, not one rect per cell
  const SVG_NS = "http://www.w3.org/2000/svg";

  const state = {mechanism: null, estimate: null, estimateKey: null, heatShape: null};

  // ------------------------------------------------------------------ helpers
  function $(id) { return document.getElementById(id); }

  function el(tag, attrs, parent, text) {
    const node = tag.startsWith("svg:")
      ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

  function finite(v) { return typeof v === "number" && Number.isFinite(v); }

  /** The full-precision text of a JSON number (data-value): "nan" for null. */
  function exact(v) { return finite(v) ? String(v) : "nan"; }

  /** A short human text of a number. */
  function fmt(v) {
    if (!finite(v)) return "\u2014";
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString("en-US");
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
    return Number(v.toPrecision(4)).toLocaleString("en-US", {maximumFractionDigits: 6});
  }

  function setNumber(node, v, text) {
    node.dataset.value = exact(v);
    node.textContent = text === undefined ? fmt(v) : text;
  }

  function timeText(unix) {
    return finite(unix) ? new Date(unix * 1000).toLocaleTimeString("en-GB") : "\u2014";
  }

  /** About n round tick values covering [lo, hi]. */
  function ticks(lo, hi, n) {
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / Math.max(1, n);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9 * step; t += step) {
      out.push(Math.abs(t) < 1e-12 * step ? 0 : t);
    }
    return out;
  }

  async function getJSON(path) {
    const answer = await fetch(path, {cache: "no-store"});
    if (!answer.ok) throw new Error(path + ": HTTP " + answer.status);
    return answer.json();
  }

  function setStatus(kind, text) {
    const node = $("status");
    node.dataset.state = kind;
    node.textContent = text;
  }

  function label(est, i) {
    const labels = est.labels;
    return labels && labels[i] !== undefined && labels[i] !== null ? String(labels[i]) : String(i);
  }

  // ------------------------------------------------------------------ mechanism
  function renderMechanism(m) {
    $("mechanism-name").textContent = m.spec.mechanism;
    document.title = "fastldp collector: " + m.spec.mechanism;
    $("privacy").textContent = m.privacy;
    $("privacy").dataset.value = m.privacy;
    $("mechanism-repr").textContent = m.repr;
    const body = $("parameter-rows");
    clear(body);
    const rows = [["mechanism", m.spec.mechanism]];
    for (const [k, v] of Object.entries(m.spec.params || {})) rows.push([k, v]);
    if (!("epsilon" in (m.spec.params || {}))) {
      rows.push(["epsilon", m.personal_budgets ? "personal (each report carries its own)" : m.epsilon]);
    }
    rows.push(["report shape", m.report_shape], ["estimate shape", m.estimate_shape]);
    for (const [k, v] of rows) {
      const tr = el("tr", {"data-testid": "param-" + k}, body);
      tr.dataset.value = typeof v === "string" ? v : JSON.stringify(v);
      el("th", {}, tr, k);
      if (Array.isArray(v)) {
        // a list (an oracle's categories): its items a space apart, so that the cell
        // wraps between them, in a box that scrolls down past a few lines
        el("div", {class: "list"}, el("td", {}, tr),
           "[" + v.map((x) => JSON.stringify(x)).join(", ") + "]");
      } else {
        el("td", {}, tr, typeof v === "string" ? v : v === null ? "\u2014" : JSON.stringify(v));
      }
    }
    const rate = m.rate_limit === null ? "no rate limit" : fmt(m.rate_limit) + " reports/s per token";
    $("limits").textContent = "Request body limit " + fmt(m.max_body) + " bytes; " + rate + ".";
  }

  // ------------------------------------------------------------------ stats
  function renderStats(s) {
    setNumber($("report-count"), s.reports);
    setNumber($("ingest-rate"), s.rate, finite(s.rate) ? fmt(Math.round(s.rate * 10) / 10) : "\u2014");
    setNumber($("batch-count"), s.batches);
    setNumber($("sanitized-count"), s.sanitized);
    const refused = Object.values(s.refused || {}).reduce((a, b) => a + b, 0);
    setNumber($("refused-count"), refused);
    const lat = s.latency_ms || {};
    const latency = $("latency");
    latency.dataset.p50 = exact(lat.p50);
    latency.dataset.p99 = exact(lat.p99);
    latency.textContent = finite(lat.p50) ? fmt(lat.p50) + " / " + fmt(lat.p99) + " ms" : "\u2014";

    const body = $("refused-rows");
    clear(body);
    for (const [reason, count] of Object.entries(s.refused || {})) {
      const tr = el("tr", {"data-testid": "refused-" + reason}, body);
      tr.dataset.value = exact(count);
      el("td", {}, tr, reason.replace(/_/g, " "));
      el("td", {class: "num"}, tr, fmt(count));
    }
    const tr = el("tr", {"data-testid": "replayed-batches"}, body);
    tr.dataset.value = exact(s.replayed_batches);
    el("td", {}, tr, "replayed (same key, not counted again)");
    el("td", {class: "num"}, tr, fmt(s.replayed_batches));

    drawHistory($("history-chart"), s);
  }

  /**
   * Cumulative reports (top) and the ingest rate (bottom) from /v1/stats' history.
   *
   * The collector opens a history point [t, count] at the first acknowledged
   * batch a second or more after the previous point, and keeps updating that
   * point's count during the second that follows; so the reports of point k
   * arrived in [t_k, t_k + 1) (or up to the next point, if sooner), and none
   * arrived between that window and t_{k+1}. The charts draw exactly that: the
   * count ramps inside each window, and the rate is the window's reports over
   * its length (an idle gap shows as zero, not as an average over the gap).
   */
  function drawHistory(svg, s) {
    clear(svg);
    const W = 420, H = 300, left = 52, right = 12;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const hist = (s.history || []).filter((p) => finite(p[0]) && finite(p[1]));
    svg.dataset.points = String(hist.length);
    if (hist.length === 0) {
      el("svg:text", {x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty"}, svg, "no data yet");
      return;
    }
    const windows = [];  // [start, end, reports in the window, count at its end]
    for (let k = 1; k < hist.length; k++) {
      const a = hist[k][0];
      const b = k + 1 < hist.length ? Math.min(a + 1, hist[k + 1][0]) : a + 1;
      if (b > a) windows.push([a, b, hist[k][1] - hist[k - 1][1], hist[k][1]]);
    }
    const t0 = Math.min(s.started || hist[0][0], hist[0][0]);
    const t1 = Math.max(t0 + 1, hist[hist.length - 1][0], ...windows.map((w) => w[1]));
    const x = (t) => left + (t - t0) / (t1 - t0) * (W - left - right);
    const panels = [
      {top: 18, height: 110, title: "reports (cumulative)", max: Math.max(1, hist[hist.length - 1][1])},
      {top: 170, height: 100, title: "ingest rate (reports/s)",
       max: Math.max(1, ...windows.map((w) => w[2] / (w[1] - w[0])))},
    ];
    for (const p of panels) {
      const y = (v) => p.top + p.height - v / p.max * p.height;
      el("svg:text", {x: left, y: p.top - 6, class: "axis-title"}, svg, p.title);
      for (const t of ticks(0, p.max, 3)) {
        el("svg:line", {x1: left, x2: W - right, y1: y(t), y2: y(t), class: "grid"}, svg);
        el("svg:text", {x: left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick"}, svg, fmt(t));
      }
      p.y = y;
    }
    for (const t of ticks(0, t1 - t0, 5)) {
      el("svg:text", {x: x(t0 + t), y: H - 8, "text-anchor": "middle", class: "tick"}, svg,
         fmt(t) + " s");
    }
    const cum = panels[0], rate = panels[1];
    const X = (t) => x(t).toFixed(1);
    let line = `M${X(hist[0][0])},${cum.y(hist[0][1]).toFixed(1)}`;
    let area = "";
    for (const [a, b, n, count] of windows) {
      line += ` H${X(a)} L${X(b)},${cum.y(count).toFixed(1)}`;
      if (n > 0) {
        area += `M${X(a)},${rate.y(0).toFixed(1)} V${rate.y(n / (b - a)).toFixed(1)} ` +
                `H${X(b)} V${rate.y(0).toFixed(1)} `;
      }
    }
    line += ` H${X(t1)}`;
    el("svg:path", {d: line, class: "line", "data-testid": "history-line"}, svg);
    el("svg:line", {x1: left, x2: W - right, y1: rate.y(0), y2: rate.y(0), class: "zero"}, svg);
    if (area) el("svg:path", {d: area, class: "area", "data-testid": "rate-steps"}, svg);
  }

  // ------------------------------------------------------------------ estimate
  function renderEstimate(est) {
    setNumber($("estimate-n"), est.n);
    setNumber($("estimate-updated"), est.updated, timeText(est.updated));
    // acknowledged reports the live estimate does not hold yet (the decode runs behind the ack)
    const pending = finite(est.pending) ? est.pending : 0;
    setNumber($("estimate-pending"), pending,
              pending > 0 ? `; ${fmt(pending)} acknowledged reports still being decoded` : "");
    renderSanitization(est.sanitization);
    const shape = est.shape || [];
    const values = est.estimate || [];
    const stds = est.std;
    if (est.n === 0) {  // the decode of no report: nothing to draw yet
      $("estimate-title").textContent = "Estimate";
      $("estimate-caption").textContent = "waiting for the first report";
      drawTopItems($("estimate-chart"), []);
      fillTable(est, [], String, [], false, false);
    } else if (shape.length === 2) {
      $("estimate-title").textContent = "Estimate: the relation matrix";
      $("estimate-caption").textContent =
        `${shape[0]} \u00d7 ${shape[1]} heat map; the table lists the ${TOP_K} largest cells`;
      drawHeatmap($("estimate-chart"), values, shape[0], shape[1]);
      const order = topIndices(values, TOP_K);
      fillTable(est, order, (i) => `(${Math.floor(i / shape[1])}, ${i % shape[1]})`,
                ["rank", "cell (row, col)", "estimate"], false, true);
    } else if (est.kind === "vector" || est.kind === "distribution") {
      $("estimate-title").textContent = "Estimate: the mean vector";
      const m = Math.min(values.length, VECTOR_ROWS);
      $("estimate-caption").textContent = `${values.length} coordinates` +
        (stds ? `, error bars \u00b1${Z} std` : "") +
        (m < values.length ? `; the table lists the first ${m}` : "");
      drawVector($("estimate-chart"), values, stds);
      fillTable(est, [...Array(m).keys()], (i) => label(est, i),
                ["coordinate", "mean", `\u00b1${Z} std`], true, false);
    } else {
      $("estimate-title").textContent = "Estimate: the top items";
      $("estimate-caption").textContent = `the ${TOP_K} largest of ${values.length} frequencies` +
        (stds ? `, error bars \u00b1${Z} std (95%)` : "");
      const order = topIndices(values, TOP_K);
      drawTopItems($("estimate-chart"), order.map((i) => ({
        index: i, label: label(est, i), value: values[i], std: stds ? stds[i] : null})));
      fillTable(est, order, (i) => label(est, i),
                ["rank", "item", "estimate", `\u00b1${Z} std`], true, true);
    }
  }

  /** Indices of the k largest finite values, largest first, ties by index. */
  function topIndices(values, k) {
    const idx = [];
    for (let i = 0; i < values.length; i++) if (finite(values[i])) idx.push(i);
    idx.sort((a, b) => (values[b] - values[a]) || (a - b));
    return idx.slice(0, k);
  }

  function fillTable(est, order, name, head, withStd, withRank) {
    const headRow = $("estimate-head");
    clear(headRow);
    for (const h of head) el("th", {}, headRow, h);
    const body = $("estimate-rows");
    clear(body);
    order.forEach((i, r) => {
      const v = est.estimate[i];
      const s = est.std ? est.std[i] : null;
      const tr = el("tr", {"data-testid": "estimate-row-" + r}, body);
      tr.dataset.index = String(i);
      tr.dataset.label = name(i);
      tr.dataset.value = exact(v);
      tr.dataset.std = exact(s);
      if (withRank) el("td", {class: "num"}, tr, String(r + 1));
      // a long label wraps inside the panel (style.css); the title holds it whole
      el("td", {class: "item", title: name(i)}, tr, name(i));
      el("td", {class: "num", "data-testid": "estimate-value-" + r}, tr, fmt(v));
      if (withStd) el("td", {class: "num"}, tr, finite(s) ? fmt(Z * s) : "\u2014");
    });
  }

  function renderSanitization(san) {
    const body = $("sanitization-rows");
    clear(body);
    if (!san) {
      el("td", {colspan: 2}, el("tr", {}, body), "this decoder reports no sanitization");
      return;
    }
    const rows = [["n_received", "received", san.n_received], ["n_valid", "valid", san.n_valid],
                  ["n_sanitized", "sanitized", san.n_sanitized]];
    for (const [k, v] of Object.entries(san.by_reason || {})) rows.push(["reason-" + k, "  " + k.replace(/_/g, " "), v]);
    for (const [key, text, v] of rows) {
      const tr = el("tr", {"data-testid": "sanitization-" + key}, body);
      tr.dataset.value = exact(v);
      el("td", {class: key.startsWith("reason-") ? "sub" : ""}, tr, text);
      el("td", {class: "num"}, tr, fmt(v));
    }
  }

  /** Horizontal bars of the top items, with +- Z std error bars. */
  function drawTopItems(svg, items) {
    clear(svg);
    svg.dataset.kind = "bars";
    state.heatShape = null;
    const W = 720, left = 120, right = 24, top = 26, rowH = 22;
    const H = top + rowH * Math.max(items.length, 1) + 10;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.dataset.bars = String(items.length);
    if (items.length === 0) {
      el("svg:text", {x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty"}, svg, "no report yet");
      return;
    }
    let lo = 0, hi = 0;
    for (const it of items) {
      const half = finite(it.std) ? Z * it.std : 0;
      lo = Math.min(lo, it.value - half);
      hi = Math.max(hi, it.value + half);
    }
    if (!(hi > lo)) hi = lo + 1;
    const x = (v) => left + (v - lo) / (hi - lo) * (W - left - right);
    for (const t of ticks(lo, hi, 6)) {
      el("svg:line", {x1: x(t), x2: x(t), y1: top - 4, y2: H - 10, class: t === 0 ? "zero" : "grid"}, svg);
      el("svg:text", {x: x(t), y: top - 10, "text-anchor": "middle", class: "tick"}, svg, fmt(t));
    }
    items.forEach((it, k) => {
      const y = top + k * rowH;
      const g = el("svg:g", {"data-index": it.index, "data-value": exact(it.value)}, svg);
      el("svg:title", {}, g, `${it.label}: ${it.value}` + (finite(it.std) ? ` \u00b1 ${Z * it.std}` : ""));
      fitText(el("svg:text", {x: left - 8, y: y + rowH / 2 + 4, "text-anchor": "end", class: "label"}, g,
                 it.label), it.label, left - 10);
      const a = x(Math.min(0, it.value)), b = x(Math.max(0, it.value));
      el("svg:rect", {x: a, y: y + 3, width: Math.max(b - a, 0.5), height: rowH - 6,
                      class: it.value < 0 ? "bar neg" : "bar"}, g);
      if (finite(it.std)) {
        const e0 = x(it.value - Z * it.std), e1 = x(it.value + Z * it.std), ym = y + rowH / 2;
        el("svg:path", {d: `M${e0},${ym} H${e1} M${e0},${ym - 5} V${ym + 5} M${e1},${ym - 5} V${ym + 5}`,
                        class: "errorbar"}, g);
      }
    });
  }

  /**
   * Shorten an SVG text to the first characters of `full` and an ellipsis until it
   * is at most `width` user units wide: the svg clips what passes its edge, so a
   * long label would otherwise lose its start (the group's <title> keeps it whole).
   */
  function fitText(node, full, width) {
    let n = full.length;
    while (n > 1 && node.getComputedTextLength() > width) {
      n -= 1;
      node.textContent = full.slice(0, n) + "\u2026";
    }
    return node;
  }

  /** Columns of a vector, with +- Z std error bars where std is known. */
  function drawVector(svg, values, stds) {
    clear(svg);
    svg.dataset.kind = "vector";
    state.heatShape = null;
    const W = 720, H = 280, left = 56, right = 16, top = 16, bottom = 30;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const d = values.length;
    svg.dataset.bars = String(d);
    let lo = 0, hi = 0;
    values.forEach((v, i) => {
      if (!finite(v)) return;
      const half = stds && finite(stds[i]) ? Z * stds[i] : 0;
      lo = Math.min(lo, v - half);
      hi = Math.max(hi, v + half);
    });
    if (!(hi > lo)) hi = lo + 1;
    const y = (v) => top + (hi - v) / (hi - lo) * (H - top - bottom);
    const w = (W - left - right) / Math.max(d, 1);
    for (const t of ticks(lo, hi, 5)) {
      el("svg:line", {x1: left, x2: W - right, y1: y(t), y2: y(t), class: t === 0 ? "zero" : "grid"}, svg);
      el("svg:text", {x: left - 6, y: y(t) + 4, "text-anchor": "end", class: "tick"}, svg, fmt(t));
    }
    for (const t of ticks(0, Math.max(d - 1, 1), 8)) {
      if (t < d) el("svg:text", {x: left + (t + 0.5) * w, y: H - 10, "text-anchor": "middle", class: "tick"}, svg, String(t));
    }
    values.forEach((v, i) => {
      if (!finite(v)) return;
      const g = el("svg:g", {"data-index": i, "data-value": exact(v)}, svg);
      el("svg:title", {}, g, `${i}: ${v}`);
      const a = y(Math.max(0, v)), b = y(Math.min(0, v));
      el("svg:rect", {x: left + i * w + w * 0.1, y: a, width: Math.max(w * 0.8, 0.5),
                      height: Math.max(b - a, 0.5), class: v < 0 ? "bar neg" : "bar"}, g);
      if (stds && finite(stds[i]) && w >= 4) {
        const cx = left + (i + 0.5) * w;
        el("svg:path", {d: `M${cx},${y(v - Z * stds[i])} V${y(v + Z * stds[i])}`, class: "errorbar"}, g);
      }
    });
  }

  /**
   * A diverging heat map (blue < 0 < red, scaled by the largest |value|) of a
   * rows x cols matrix in row-major order. Up to MAX_SVG_CELLS cells, one SVG
   * rect per cell (with data-index, data-value and a tooltip); a larger matrix
   * is painted as one image, a pixel per cell (its top cells stay in the table).
   */
  function drawHeatmap(svg, values, rows, cols) {
    const big = rows * cols > MAX_SVG_CELLS;
    const cell = big ? 640 / Math.max(rows, cols)
      : Math.max(2, Math.min(10, Math.floor(640 / Math.max(rows, cols))));
    const left = 40, top = 24, legendW = 200;
    const W = left + cols * cell + 24, H = top + rows * cell + 56;
    const shapeKey = rows + "x" + cols;
    if (state.heatShape !== shapeKey) {
      clear(svg);
      svg.dataset.kind = "heatmap";
      svg.dataset.cells = big ? "image" : "rects";
      svg.setAttribute("viewBox", `0 0 ${Math.max(W, left + legendW + 80)} ${H}`);
      for (const t of ticks(0, rows - 1, 4)) {
        el("svg:text", {x: left - 6, y: top + (t + 0.5) * cell + 4, "text-anchor": "end", class: "tick"}, svg, String(t));
      }
      for (const t of ticks(0, cols - 1, 4)) {
        el("svg:text", {x: left + (t + 0.5) * cell, y: top - 6, "text-anchor": "middle", class: "tick"}, svg, String(t));
      }
      if (big) {
        el("svg:image", {id: "heat-image", x: left, y: top, width: cols * cell, height: rows * cell,
                         preserveAspectRatio: "none", style: "image-rendering: pixelated"}, svg);
      } else {
        const grid = el("svg:g", {class: "cells"}, svg);
        for (let i = 0; i < rows; i++) {
          for (let j = 0; j < cols; j++) {
            const r = el("svg:rect", {x: left + j * cell, y: top + i * cell, width: cell, height: cell,
                                      "data-index": i * cols + j}, grid);
            el("svg:title", {}, r);
          }
        }
      }
      const defs = el("svg:defs", {}, svg);
      const grad = el("svg:linearGradient", {id: "heat-legend"}, defs);
      el("svg:stop", {offset: "0%", "stop-color": heatColor(-1)}, grad);
      el("svg:stop", {offset: "50%", "stop-color": heatColor(0)}, grad);
      el("svg:stop", {offset: "100%", "stop-color": heatColor(1)}, grad);
      const ly = top + rows * cell + 14;
      el("svg:rect", {x: left, y: ly, width: legendW, height: 10, fill: "url(#heat-legend)", class: "legend"}, svg);
      el("svg:text", {x: left, y: ly + 24, "text-anchor": "start", class: "tick", id: "heat-min"}, svg);
      el("svg:text", {x: left + legendW / 2, y: ly + 24, "text-anchor": "middle", class: "tick"}, svg, "0");
      el("svg:text", {x: left + legendW, y: ly + 24, "text-anchor": "end", class: "tick", id: "heat-max"}, svg);
      state.heatShape = shapeKey;
    }
    let scale = 0;
    for (const v of values) if (finite(v)) scale = Math.max(scale, Math.abs(v));
    svg.dataset.bars = String(rows * cols);
    svg.dataset.scale = exact(scale);
    if (scale === 0) scale = 1;
    if (big) {
      const canvas = document.createElement("canvas");
      canvas.width = cols;
      canvas.height = rows;
      const ctx = canvas.getContext("2d");
      const img = ctx.createImageData(cols, rows);
      for (let k = 0; k < rows * cols; k++) {
        const v = values[k];
        const [r, g, b] = finite(v) ? heatRGB(v / scale) : [187, 187, 187];
        img.data[4 * k] = r;
        img.data[4 * k + 1] = g;
        img.data[4 * k + 2] = b;
        img.data[4 * k + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
      svg.querySelector("#heat-image").setAttribute("href", canvas.toDataURL("image/png"));
    } else {
      const cells = svg.querySelector("g.cells").children;
      for (let k = 0; k < cells.length; k++) {
        const v = values[k];
        const r = cells[k];
        r.setAttribute("fill", finite(v) ? heatColor(v / scale) : "#bbb");
        r.setAttribute("data-value", exact(v));
        r.firstChild.textContent = `(${Math.floor(k / cols)}, ${k % cols}): ${finite(v) ? v : "not finite"}`;
      }
    }
    svg.querySelector("#heat-min").textContent = fmt(-scale);
    svg.querySelector("#heat-max").textContent = fmt(scale);
  }

  /** u in [-1, 1] -> [r, g, b] from blue (-1) through white (0) to red (1). */
  function heatRGB(u) {
    const t = Math.max(-1, Math.min(1, u));
    const [r, g, b] = t >= 0 ? [178, 24, 43] : [33, 102, 172];
    const a = Math.abs(t);
    return [r, g, b].map((c) => Math.round(255 + (c - 255) * a));
  }

  function heatColor(u) { return "rgb(" + heatRGB(u).join(",") + ")"; }

  // ------------------------------------------------------------------ the loop
  async function tick() {
    try {
      if (!state.mechanism) {
        try {
          state.mechanism = await getJSON("/v1/mechanism");
          renderMechanism(state.mechanism);
        } catch (err) {
          /* retried at the next tick (a decoder may need a first report) */
        }
      }
      const stats = await getJSON("/v1/stats");
      renderStats(stats);
      const key = stats.reports + ":" + stats.updated;
      if (key !== state.estimateKey) {
        let est = null;
        try {
          est = await getJSON("/v1/estimate");
        } catch (err) {
          if (stats.reports > 0) throw err;
          $("estimate-caption").textContent = "waiting for the first report";
        }
        if (est) {
          state.estimate = est;
          renderEstimate(est);
          // the estimate and the count can be a batch apart: fetch again next tick until they agree
          state.estimateKey = est.n === stats.reports ? key : null;
        }
      }
      document.body.dataset.reports = String(stats.reports);
      setStatus("live", "live \u00b7 " + timeText(Date.now() / 1000));
    } catch (err) {
      setStatus("error", "disconnected (" + err.message + "); retrying");
    }
    setTimeout(tick, POLL_MS);
  }

  tick();
})();

// mqblast report: draws the charts described in #mqblast-charts with uPlot. Everything the
// page needs is inline; it requests nothing. window.mqblast records what each chart drew
// (for the browser test): its points, and per series the pixels painted in its colour.
(function () {
  "use strict";
  let specs = JSON.parse(document.getElementById("mqblast-charts").textContent);
  const state = { charts: {}, ready: false, expected: specs.filter(c => !c.empty).length };
  window.mqblast = state;
  let plots = [];

  function fmtUS(v) {
    if (v == null) return "–";
    const a = Math.abs(v);
    if (a >= 1e7) return (v / 1e6).toFixed(0) + "s";
    if (a >= 1e6) return (v / 1e6).toFixed(2) + "s";
    if (a >= 1e3) return (v / 1e3).toPrecision(3) + "ms";
    return Math.round(v) + "µs";
  }
  function fmtSI(v) {
    if (v == null) return "–";
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toPrecision(3) + "G";
    if (a >= 1e6) return (v / 1e6).toPrecision(3) + "M";
    if (a >= 1e4) return (v / 1e3).toPrecision(3) + "k";
    return (Math.round(v * 100) / 100).toString();
  }
  function fmtBytes(v) {
    if (v == null) return "–";
    const a = Math.abs(v);
    if (a >= 1 << 30) return (v / (1 << 30)).toPrecision(3) + " GiB";
    if (a >= 1 << 20) return (v / (1 << 20)).toPrecision(3) + " MiB";
    if (a >= 1 << 10) return (v / (1 << 10)).toPrecision(3) + " KiB";
    return v + " B";
  }
  function fmt(unit, v) {
    if (v == null) return "–";
    switch (unit) {
      case "us": return fmtUS(v);
      case "bytes": return fmtBytes(v);
      case "percent": return (Math.round(v * 10) / 10) + "%";
      case "per_s": return fmtSI(v) + "/s";
      default: return fmtSI(v);
    }
  }
  // pct labels x = 1/(1−p) as the percentile p.
  function pct(x) {
    const p = 100 * (1 - 1 / x);
    if (p <= 0) return "0%";
    const digits = Math.max(0, Math.ceil(Math.log10(x)) - 2);
    return p.toFixed(digits) + "%";
  }
  function isPow10(x) { const l = Math.log10(x); return Math.abs(l - Math.round(l)) < 1e-4; }

  function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

  // painted counts, per series, the canvas pixels in the series' colour: what was drawn,
  // not only what was given.
  function painted(u, series) {
    const cv = u.ctx.canvas;
    const d = u.ctx.getImageData(0, 0, cv.width, cv.height).data;
    const rgb = series.map(s => [1, 3, 5].map(i => parseInt(s.color.slice(i, i + 2), 16)));
    const n = series.map(() => 0);
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] < 200) continue;
      for (let k = 0; k < rgb.length; k++) {
        const c = rgb[k];
        if (Math.abs(d[i] - c[0]) < 12 && Math.abs(d[i + 1] - c[1]) < 12 && Math.abs(d[i + 2] - c[2]) < 12) { n[k]++; break; }
      }
    }
    return n;
  }

  // drawMarks draws the chart's marks (the stages of a staged run) as dashed vertical lines
  // with their labels, in the muted colour (no series has it); it returns the labels of
  // those inside the plot.
  function drawMarks(c, u) {
    const drawn = [];
    if (!c.marks) return drawn;
    const ctx = u.ctx, b = u.bbox, px = window.devicePixelRatio || 1;
    ctx.save();
    ctx.strokeStyle = ctx.fillStyle = css("--muted") || "#888888";
    ctx.lineWidth = px;
    ctx.setLineDash([4 * px, 3 * px]);
    ctx.font = (10 * px) + "px sans-serif";
    for (const m of c.marks) {
      const x = Math.round(u.valToPos(m.x, "x", true));
      if (!(x >= b.left && x <= b.left + b.width)) continue;
      ctx.beginPath();
      ctx.moveTo(x, b.top);
      ctx.lineTo(x, b.top + b.height);
      ctx.stroke();
      ctx.fillText(m.label, x + 3 * px, b.top + 10 * px);
      drawn.push(m.label);
    }
    ctx.restore();
    return drawn;
  }

  // markRange is the x range [min, max] of a time chart's data widened to its marks.
  function markRange(c, min, max) {
    for (const m of c.marks || []) {
      if (min == null || m.x < min) min = m.x;
      if (max == null || m.x > max) max = m.x;
    }
    return [min, max];
  }

  function record(c, u, marks) {
    let points = 0;
    for (let i = 1; i < u.data.length; i++) {
      for (const v of u.data[i]) if (v != null) points++;
    }
    state.charts[c.id] = { drawn: true, points: points, series: u.series.length - 1, painted: painted(u, c.series),
      canvas: !!u.root.querySelector("canvas"), width: u.width, height: u.height, marks: marks };
  }

  function build(widthOverride) {
    for (const p of plots) p.destroy();
    plots = [];
    state.charts = {};
    const fg = css("--fg"), grid = css("--grid");
    for (const c of specs) {
      if (c.empty) continue;
      const el = document.getElementById("plot-" + c.id);
      if (!el) throw new Error("no element for chart " + c.id);
      const width = widthOverride || Math.max(320, el.clientWidth || 600);
      const spectrum = c.x_kind === "spectrum", offered = c.x_kind === "offered";
      const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
      const opts = {
        width: width, height: 250,
        scales: {
          // A time chart's range takes in its marks: a stage that starts before the first
          // interval's time (publishing began within it) is drawn at the left edge, not lost.
          x: spectrum || offered ? { time: false, distr: 3, log: 10 } : { time: false, range: (u, min, max) => markRange(c, min, max) },
          y: c.y_log ? { distr: 3, log: 10 } : { range: (u, min, max) => [0, max > 0 ? max * 1.08 : 1] },
        },
        axes: [
          Object.assign({}, axis, {
            label: spectrum ? "percentile (x = 1/(1−p))" : offered ? "offered (msg/s, log axis)" : "seconds into the run",
            values: spectrum ? (u, xs) => xs.map(x => (isPow10(x) ? pct(x) : ""))
              : offered ? (u, xs) => xs.map(x => fmt("per_s", x)) : (u, xs) => xs.map(x => x + "s"),
          }),
          Object.assign({}, axis, { size: 72, values: (u, ys) => ys.map(y => (y == null ? "" : fmt(c.y_unit, y))) }),
        ],
        series: [{ label: spectrum ? "percentile" : offered ? "offered" : "t",
          value: (u, x) => (x == null ? "–" : spectrum ? pct(x) : offered ? fmt("per_s", x) : x.toFixed(1) + "s") }]
          .concat(c.series.map(s => ({
            label: s.label, stroke: s.color, width: 2, dash: s.dash ? [6, 4] : undefined, spanGaps: !!c.span_gaps,
            points: { show: c.x.length <= 60, size: 4, fill: s.color },
            value: (u, v) => fmt(c.y_unit, v),
          }))),
        legend: { live: true },
        cursor: { drag: { x: true, y: false } },
        hooks: { draw: [u => record(c, u, drawMarks(c, u))] },
      };
      const data = [c.x].concat(c.series.map(s => s.values));
      plots.push(new uPlot(opts, data, el));
    }
    state.ready = true;
  }

  function rebuild(w) {
    try { build(w); } catch (e) { console.error("mqblast report: " + (e && e.stack || e)); }
  }
  rebuild();
  // Printing draws the charts at the width of a page in the light theme (class "print").
  const root = document.documentElement;
  const width = () => (root.classList.contains("print") ? 680 : undefined);
  const print = on => { root.classList.toggle("print", on); rebuild(width()); };
  let t = 0;
  window.addEventListener("resize", () => { clearTimeout(t); t = setTimeout(() => rebuild(width()), 150); });
  window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => rebuild(width()));
  window.matchMedia("print").addEventListener("change", e => print(e.matches));
  window.addEventListener("beforeprint", () => print(true));
  window.addEventListener("afterprint", () => print(false));
  // update draws new charts (a live page's, whose panels were just replaced).
  state.update = function (next) {
    specs = next;
    state.expected = specs.filter(c => !c.empty).length;
    rebuild(width());
  };
})();

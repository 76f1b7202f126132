// mqblast live page: the report of a run under way. Each event of /events is the whole page
// as it stands (its panels' HTML and its charts), so a page that reconnects is current at
// once; the event of the run's end carries its final report, and the stream stops there.
// window.mqblast.live records what arrived (for the browser test).
(function () {
  "use strict";
  const state = window.mqblast;
  const live = { events: 0, seq: -1, intervals: 0, done: false, opened: 0, errors: 0 };
  state.live = live;
  const es = new EventSource("events");
  es.addEventListener("open", () => { live.opened++; });
  es.addEventListener("error", () => { live.errors++; });
  es.addEventListener("page", e => {
    const d = JSON.parse(e.data);
    if (d.seq <= live.seq) return;
    document.getElementById("mqblast-main").innerHTML = d.main;
    document.title = d.title;
    state.update(d.charts);
    live.events++;
    live.seq = d.seq;
    live.intervals = d.intervals;
    if (d.done) {
      live.done = true;
      es.close();
    }
  });
})();

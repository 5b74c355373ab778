// The status page's only script: it keeps each section live without a
// reload. A pod's section is fetched again (server-rendered HTML) on each
// event of the pod's stream and every data-refresh milliseconds; the
// plugins' section on the same period. Elapsed times tick in between, at
// the host clock's rate (data-clock-rate: 1 for the wall clock, the
// simulator's scale under -simulate, 0 for a clock that does not run).
"use strict";

(() => {
  const body = document.body;
  const rate = Number(body.dataset.clockRate) || 0;
  const refreshMs = Math.max(1000, Number(body.dataset.refresh) || 5000);

  // What the page did, for whoever looks (the browser test does).
  const stats = { swaps: 0, events: 0, failures: 0 };
  window.wakeStatus = stats;

  function formatDuration(total) {
    const s = Math.max(0, Math.floor(total));
    const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
    if (h > 0) return h + " h " + m + " min";
    if (m > 0 && r > 0) return m + " min " + r + " s";
    if (m > 0) return m + " min";
    return r + " s";
  }

  // Each section refreshes one request at a time; a response that arrives
  // after a newer one started is dropped.
  function refresher(part) {
    let seq = 0;
    return async () => {
      const mine = ++seq;
      let html;
      try {
        const r = await fetch(part.dataset.fragment, { cache: "no-store" });
        if (!r.ok) throw new Error("status " + r.status);
        html = await r.text();
      } catch (e) {
        stats.failures++;
        part.classList.add("stale");
        return;
      }
      if (mine !== seq) return;
      part.innerHTML = html;
      part.classList.remove("stale");
      stamp(part);
      stats.swaps++;
    };
  }

  // stamp notes when each elapsed counter in root was rendered.
  function stamp(root) {
    const now = performance.now();
    for (const el of root.querySelectorAll("[data-elapsed]")) el.dataset.renderedAt = String(now);
  }

  function tick() {
    if (rate <= 0) return;
    const now = performance.now();
    for (const el of document.querySelectorAll("[data-elapsed]")) {
      const base = Number(el.dataset.elapsed), at = Number(el.dataset.renderedAt);
      el.textContent = formatDuration(base + (now - at) / 1000 * rate);
    }
  }

  // setLink says, beside the pod's name (outside the part that is
  // swapped), whether its event stream is open.
  function setLink(part, state) {
    const section = part.closest("section") || part;
    const el = section.querySelector("[data-link]");
    if (el) el.textContent = state;
    section.dataset.link = state;
  }

  // follow keeps a pod's event stream open: EventSource reconnects by
  // itself after an error; an "end" event (the stream fell behind, or the
  // host is shutting down) closes it, and it is opened again shortly.
  function follow(part, refresh) {
    const es = new EventSource(part.dataset.events);
    es.onopen = () => { setLink(part, "live"); refresh(); };
    es.onmessage = () => { stats.events++; refresh(); };
    es.onerror = () => setLink(part, "reconnecting");
    es.addEventListener("end", () => {
      es.close();
      setLink(part, "reconnecting");
      setTimeout(() => follow(part, refresh), 1000);
    });
  }

  stamp(document);
  for (const part of document.querySelectorAll("[data-fragment]")) {
    const refresh = refresher(part);
    if (part.dataset.events) follow(part, refresh);
    setInterval(refresh, refreshMs);
  }
  setInterval(tick, 1000);
})();

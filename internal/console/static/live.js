// Live parts of the segment and campaign forms: a form with
// data-live="URL" is posted to URL (the same fields, as the form would
// send them) a moment after any field changes, and the answer replaces the
// element data-live-target names: the segment builder's count, the
// campaign body's character and segment counter. An answer that names
// conditions (data-error-row) shows each error next to its condition. The forms work without it: their buttons post the same.
(function () {
  document.querySelectorAll("form[data-live]").forEach(function (form) {
    var target = document.getElementById(form.dataset.liveTarget);
    if (!target) return;
    var timer = null, seq = 0, inflight = null;
    function refresh() {
      var mine = ++seq;
      // A count over many contacts takes a while: a newer one replaces it,
      // and the server stops the old query when its request is aborted.
      if (inflight) inflight.abort();
      inflight = new AbortController();
      fetch(form.dataset.live, {
        method: "POST",
        signal: inflight.signal,
        credentials: "same-origin",
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(new FormData(form)).toString()
      })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          if (mine !== seq) return; // a newer answer is on its way
          target.innerHTML = html;
          form.querySelectorAll("[data-row-error]").forEach(function (el) {
            el.hidden = true;
            el.textContent = "";
          });
          target.querySelectorAll("[data-error-row]").forEach(function (err) {
            var row = form.querySelector('[data-row-error="' + err.dataset.errorRow + '"]');
            if (row) {
              row.textContent = err.textContent;
              row.hidden = false;
            }
          });
        })
        .catch(function () {});
    }
    function later() {
      clearTimeout(timer);
      timer = setTimeout(refresh, 250);
    }
    form.addEventListener("input", later);
    form.addEventListener("change", later);
  });
})();

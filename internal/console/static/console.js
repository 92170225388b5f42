// Refreshes a page part while it says something may still change: an
// element with data-refresh="URL" is replaced by URL's answer every second
// while it holds an element marked data-pending (a reply queued or sent,
// not yet delivered or failed). It is the console's only script; every
// page works without it.
(function () {
  function poll(el) {
    if (!el.querySelector("[data-pending]")) return;
    setTimeout(function () {
      fetch(el.dataset.refresh, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) { el.innerHTML = html; poll(el); })
        .catch(function () { setTimeout(function () { poll(el); }, 4000); });
    }, 1000);
  }
  document.querySelectorAll("[data-refresh]").forEach(poll);
})();

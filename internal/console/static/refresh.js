// refresh.js updates in place the parts of a console page that change on
// the server (an import's progress, a webhook's delivery log). An element
// with data-refresh="URL" is replaced, every data-every seconds (1 by
// default), by the element URL answers, an HTML fragment with the same id;
// when the new element has no data-refresh it is final and polling stops.
// Without this script the pages still work: they say to reload.
(function () {
  'use strict';
  function schedule(el) {
    var every = parseFloat(el.getAttribute('data-every')) || 1;
    setTimeout(function () { refresh(el); }, every * 1000);
  }
  function refresh(el) {
    if (!el.isConnected) return;
    if (document.hidden) { schedule(el); return; } // no work for a tab nobody sees
    fetch(el.getAttribute('data-refresh'), { credentials: 'same-origin', redirect: 'manual' })
      .then(function (r) {
        if (r.type === 'opaqueredirect' || r.status === 401 || r.status === 403) {
          location.reload(); // signed out: the page shows the sign-in form
          return null;
        }
        if (!r.ok) throw new Error('HTTP ' + r.status);
        return r.text();
      })
      .then(function (html) {
        if (html === null) return;
        var t = document.createElement('template');
        t.innerHTML = html.trim();
        var next = t.content.firstElementChild;
        if (!next || next.id !== el.id) throw new Error('unexpected fragment');
        el.replaceWith(next);
        if (next.hasAttribute('data-refresh')) schedule(next);
      })
      .catch(function () { schedule(el); }); // a passing failure: try again
  }
  document.querySelectorAll('[data-refresh]').forEach(schedule);
})();

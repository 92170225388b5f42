// The segments list's member counts, loaded after the page: each
// element with data-count="URL" is replaced by URL's answer, one segment
// after another (a count reads every contact of the brand, and a brand
// runs only a few at once). Without it, each row's "Count members" link
// counts that segment.
(function () {
  var cells = Array.prototype.slice.call(document.querySelectorAll("[data-count]"));
  function next() {
    var el = cells.shift();
    if (!el) return;
    if (el.querySelector("b")) return next(); // counted already
    fetch(el.dataset.count, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) { el.innerHTML = html; next(); })
      .catch(function () { next(); });
  }
  next();
})();

// The segment builder: choosing a condition's field or its condition
// shows at once the conditions and the value control that fit it (a
// menu of states, of the field's values, yes or no, a number of days…).
// It posts the form as the "Show the conditions for this field" button
// would and puts the answer's conditions in place of the page's, so the
// builder works the same without it, a button press at a time.
(function () {
  var form = document.querySelector("form.builder");
  if (!form) return;
  form.querySelectorAll("[data-nojs]").forEach(function (b) { b.hidden = true; });
  var seq = 0;
  form.addEventListener("change", function (ev) {
    if (!ev.target.matches || !ev.target.matches("[data-rebuild]")) return;
    var focus = ev.target.id, mine = ++seq;
    var body = new URLSearchParams(new FormData(form));
    body.set("action", "refresh");
    fetch(form.getAttribute("action"), {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: body.toString()
    })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        if (mine !== seq) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("criteria"), rows = doc.querySelector('input[name="rows"]');
        if (!fresh) return;
        document.getElementById("criteria").replaceWith(fresh);
        if (rows) form.querySelector('input[name="rows"]').value = rows.value;
        fresh.querySelectorAll("[data-nojs]").forEach(function (b) { b.hidden = true; });
        var el = document.getElementById(focus);
        if (el) el.focus();
        form.dispatchEvent(new Event("change")); // the live count counts again
      })
      .catch(function () {});
  });
})();

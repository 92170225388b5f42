// The column-mapping step of the Imports page (D22): when a CSV file is
// chosen, its header row is read here, sent to /console/imports/columns,
// and the answer (a menu per column, its contact field guessed from its
// name) is shown in the form, which sends the choices with the file.
// Without this script the columns are read by their names.
(function () {
  var input = document.getElementById("file");
  var box = document.getElementById("mapping");
  if (!input || !box) return;

  // headerOf returns the cells of the first CSV record of text.
  function headerOf(text) {
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    var end = text.search(/\r?\n/), first = end < 0 ? text : text.slice(0, end);
    var commas = 0, semis = 0, q = false, i, c;
    for (i = 0; i < first.length; i++) {
      c = first[i];
      if (c === '"') q = !q;
      else if (!q && c === ",") commas++;
      else if (!q && c === ";") semis++;
    }
    var sep = semis > commas ? ";" : ",", cells = [], cell = "";
    q = false;
    for (i = 0; i < text.length; i++) {
      c = text[i];
      if (q) {
        if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; }
        else if (c === '"') q = false;
        else cell += c;
      } else if (c === '"') q = true;
      else if (c === sep) { cells.push(cell.trim()); cell = ""; }
      else if (c === "\n" || c === "\r") break;
      else cell += c;
    }
    cells.push(cell.trim());
    return cells;
  }

  input.addEventListener("change", function () {
    box.innerHTML = "";
    var f = input.files && input.files[0];
    if (!f) return;
    f.slice(0, 65536).text().then(function (text) {
      var q = new URLSearchParams();
      headerOf(text).forEach(function (c) { q.append("c", c); });
      return fetch(box.dataset.columns + "?" + q.toString(), { credentials: "same-origin" });
    }).then(function (r) {
      return r.ok ? r.text() : Promise.reject(r.status);
    }).then(function (html) {
      box.innerHTML = html;
    }).catch(function () {
      box.textContent = "The columns could not be read here; they will be read by their names.";
    });
  });
})();

// The campaign form (issue #32): typing a date chooses "Schedule", so a
// date is never lost to the preselected "Send now"; choosing "Send now"
// clears the date. The server schedules a typed date without it too.
(function () {
  var at = document.getElementById("send_at");
  var later = document.getElementById("when-later");
  var now = document.getElementById("when-now");
  if (!at || !later || !now) return;
  at.addEventListener("input", function () { if (at.value) later.checked = true; });
  now.addEventListener("change", function () { if (now.checked) at.value = ""; });
})();

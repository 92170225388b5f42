// Copy buttons: a button with data-copy="ID" copies the value of the field
// with that id (a sign-in link, a signing secret) and says so in the
// page's [data-copy-status]. Without this script the buttons stay hidden
// and the field's text can be selected and copied by hand.
(function () {
  document.querySelectorAll("button[data-copy]").forEach(function (btn) {
    var field = document.getElementById(btn.dataset.copy);
    if (!field) return;
    var status = btn.parentNode.querySelector("[data-copy-status]");
    function say(text) { if (status) status.textContent = text; }
    btn.hidden = false;
    btn.addEventListener("click", function () {
      field.focus();
      field.select();
      function fallback() {
        var ok = false;
        try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
        say(ok ? "Copied." : "Selected: press Ctrl+C (⌘C on a Mac) to copy.");
      }
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(field.value).then(function () { say("Copied."); }, fallback);
      } else {
        fallback();
      }
    });
  });
})();

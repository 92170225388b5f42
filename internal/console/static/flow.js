// The flow editor (flows.go): show only the trigger's own fields. Without
// this script every field shows, with a hint to fill in only what the
// choice needs.
(() => {
  const trigger = document.getElementById('trigger');
  if (!trigger) return;
  const show = () => {
    for (const p of document.querySelectorAll('[data-for-trigger]')) {
      p.hidden = p.dataset.forTrigger !== trigger.value;
    }
    for (const p of document.querySelectorAll('[data-no-script]')) p.hidden = true;
  };
  trigger.addEventListener('change', show);
  show();
})();

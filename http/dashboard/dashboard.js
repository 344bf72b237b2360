// The copy button next to a secret shown once: copies the text of the element it names.
document.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-copy]');
  if (!button) return;
  const target = document.getElementById(button.getAttribute('data-copy'));
  if (!target) return;
  const done = () => { button.textContent = 'Copied'; };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(target.textContent).then(done, () => select(target));
  else { select(target); try { document.execCommand('copy'); done(); } catch (_) { /* selected for a manual copy */ } }
});
function select(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

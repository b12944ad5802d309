// Copy buttons for commands shown in <pre> blocks.
(function () {
  "use strict";
  document.querySelectorAll("button[data-copy-target]").forEach(function (button) {
    button.addEventListener("click", function () {
      var target = document.getElementById(button.getAttribute("data-copy-target"));
      if (!target || !navigator.clipboard) return;
      navigator.clipboard.writeText(target.textContent).then(function () {
        button.textContent = "Copied";
        setTimeout(function () { button.textContent = "Copy command"; }, 2000);
      });
    });
  });
})();

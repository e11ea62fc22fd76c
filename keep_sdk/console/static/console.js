// keep console: reload the page's main section when the store changes (server-sent events).
(function () {
  "use strict";
  if (!window.EventSource || !document.getElementById("main")) { return; }
  var source = new EventSource("/live");
  source.addEventListener("hello", function () { document.body.dataset.live = "on"; });
  source.addEventListener("change", function () {
    htmx.ajax("GET", window.location.pathname + window.location.search,
      { target: "#main", select: "#main", swap: "outerHTML" });
  });
  source.onerror = function () { document.body.dataset.live = "off"; };
})();

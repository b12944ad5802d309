// Polls the job's JSON API while it runs and updates the status panel; reloads once it finishes.
// Between reports the elapsed time keeps counting, and a long request says how long it has run,
// so a 45 s request does not look like a frozen page.
(function () {
  "use strict";
  var panel = document.getElementById("job-status");
  if (!panel || panel.getAttribute("data-active") !== "true") return;
  var url = panel.getAttribute("data-status-url");
  var reported = null;  // {elapsed: seconds at the last report, at: when it came, done, since}

  function field(name) { return panel.querySelector('[data-field="' + name + '"]'); }

  // The elapsed time since the last report, counted here; the request under way, once it has
  // taken more than a few seconds.
  function tick() {
    if (!reported || reported.status !== "running") return;
    var now = Date.now() / 1000;
    var elapsed = field("elapsed_s");
    if (elapsed) elapsed.textContent = Math.round(reported.elapsed + now - reported.at);
    var current = field("current");
    if (!current) return;
    var running = Math.round(now - reported.since);
    var next = reported.done + 1;
    current.hidden = running < 5 || !reported.total || next > reported.total;
    current.textContent = " · request " + next + " running for " + running + " s";
  }

  // A linear estimate, as the server renders it: elapsed per request done, times requests to go.
  function remaining(progress) {
    if (!progress.done || !progress.total || progress.elapsed_s == null || progress.done >= progress.total) return "?";
    return Math.round(progress.elapsed_s / progress.done * (progress.total - progress.done));
  }

  function show(job) {
    var progress = job.progress || {};
    var values = {
      status: job.status, phase: progress.phase || "–", done: progress.done, total: progress.total || "?",
      tokens: progress.tokens, elapsed_s: progress.elapsed_s == null ? 0 : Math.round(progress.elapsed_s),
      remaining_s: remaining(progress), queue_position: job.queue_position
    };
    // The queue standing and the "queued" message only say something while the job waits.
    var standing = panel.querySelector("#queue-standing");
    if (standing && job.status !== "queued") standing.hidden = true;
    if (job.status !== "queued") {
      document.querySelectorAll(".messages .job-queued").forEach(function (item) { item.remove(); });
    }
    var now = Date.now() / 1000;
    var done = progress.done || 0;
    var elapsed = progress.elapsed_s == null ? 0 : progress.elapsed_s;
    // The worker reports between requests: while its figure stands still, keep counting from
    // when it came rather than jumping back to it.
    var same = reported && reported.reportedElapsed === elapsed;
    reported = {
      status: job.status,
      reportedElapsed: elapsed,
      elapsed: same ? reported.elapsed : elapsed,
      at: same ? reported.at : now,
      done: done,
      total: progress.total || 0,
      since: reported && reported.done === done && reported.status === job.status ? reported.since : now
    };
    Object.keys(values).forEach(function (name) {
      var element = panel.querySelector('[data-field="' + name + '"]');
      if (element) element.textContent = values[name];
    });
    tick();
    // A Hugging Face model being fetched by the GPU host, in the server's own words.
    var download = panel.querySelector('[data-field="download"]');
    if (download) {
      download.textContent = progress.download || "";
      download.hidden = !progress.download;
    }
    var bar = panel.querySelector("progress");
    if (bar) bar.value = progress.percent || 0;
    // The engine's recent log, as the worker last sent it.
    var log = document.querySelector("#engine-log [data-log]");
    if (log && job.log_tail) {
      log.textContent = job.log_tail;
      log.parentNode.hidden = false;
      log.scrollTop = log.scrollHeight;
    }
  }

  function poll() {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (job) {
        if (!job) return setTimeout(poll, 5000);
        show(job);
        if (job.status === "queued" || job.status === "running") setTimeout(poll, 2000);
        else window.location.reload();
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
  setInterval(tick, 1000);
})();

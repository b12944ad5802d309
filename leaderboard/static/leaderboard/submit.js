// The submit form, enhanced: presets fill it in place, only the fields the chosen speculative
// types and protocol use are shown (and sent), drafts that cannot run with the target are greyed
// out with the reason, and the token budget and GPU time follow what the user types.
// Without this script every field shows and the server checks everything on submit.
(function () {
  "use strict";
  var form = document.getElementById("submit-form");
  var dataElement = document.getElementById("submit-data");
  if (!form || !dataElement) return;
  var data = JSON.parse(dataElement.textContent);
  var compatibility = data.compatibility;
  // A rerun's threads are its config's: a host's advice does not replace them.
  var edited = data.threads_kept ? { threads: true } : {};

  function control(name) { return form.elements.namedItem(name); }

  function checkedTypes() {
    return Array.prototype.filter.call(
      form.querySelectorAll("input[name=spec_types]"), function (box) { return box.checked; }
    ).map(function (box) { return box.value; });
  }

  function protocol() {
    var select = control("protocol");
    return select && select.value ? select.value : "quick";
  }

  function words(element, attribute) {
    var value = element.getAttribute(attribute);
    return value === null ? null : value.split(" ").filter(Boolean);
  }

  // A field that does not apply is hidden and disabled, so the browser does not send it.
  function showField(element, shown) {
    element.hidden = !shown;
    element.querySelectorAll("input, select, textarea").forEach(function (input) {
      input.disabled = !shown;
    });
  }

  function applies(element, types, chosenProtocol) {
    var needTypes = words(element, "data-spec-types");
    var needProtocols = words(element, "data-protocols");
    if (needTypes && !needTypes.some(function (t) { return types.indexOf(t) >= 0; })) return false;
    if (needProtocols && needProtocols.indexOf(chosenProtocol) < 0) return false;
    return true;
  }

  function refreshFields() {
    var types = checkedTypes();
    var chosen = protocol();
    form.querySelectorAll("[data-spec-types], [data-protocols]").forEach(function (element) {
      if (element.classList.contains("field")) showField(element, applies(element, types, chosen));
      else element.hidden = !applies(element, types, chosen);
    });
    form.querySelectorAll("fieldset.group").forEach(function (group) {
      var fields = group.querySelectorAll(":scope > .field");
      group.hidden = fields.length > 0 && Array.prototype.every.call(fields, function (f) { return f.hidden; });
    });
  }

  // Notes under a control: one line per option that cannot be chosen, with its reason.
  function showNotes(list, notes) {
    if (!list) return;
    list.textContent = "";
    notes.forEach(function (note) {
      var item = document.createElement("li");
      item.textContent = note;
      list.appendChild(item);
    });
    list.hidden = notes.length === 0;
  }

  // Greys out what cannot run with this target. A choice already made stays selectable: its
  // reason shows beside it and the server refuses it with the same reason.
  function mark(option, label, reason, notes) {
    var chosen = option.selected || option.checked;
    option.disabled = Boolean(reason) && !chosen;
    if (reason) {
      option.title = reason;
      option.setAttribute("data-incompatible", "true");
      notes.push((chosen ? "Chosen, but it cannot run: " : "") + (label ? label + ": " : "") + reason);
    } else {
      option.removeAttribute("title");
      option.removeAttribute("data-incompatible");
    }
  }

  function refreshCompatibility() {
    var target = control("target_model") ? control("target_model").value : "";
    var types = checkedTypes();
    var draftSelect = control("draft_model");
    var byType = (compatibility.drafts || {})[target] || {};
    // The types that take a draft model are the ones the draft field is shown for.
    var draftField = document.getElementById("field-draft_model");
    var draftTypes = draftField ? words(draftField, "data-spec-types") || [] : [];
    var draftType = types.filter(function (t) { return draftTypes.indexOf(t) >= 0; })[0];
    var draftNotes = [];
    if (draftSelect) {
      Array.prototype.forEach.call(draftSelect.options, function (option) {
        if (!option.hasAttribute("data-name")) option.setAttribute("data-name", option.textContent);
        var reasons = draftType ? byType[draftType] || {} : {};
        var reason = option.value ? reasons[option.value] : null;
        mark(option, option.getAttribute("data-name"), reason, draftNotes);
        option.textContent = option.getAttribute("data-name") + (reason ? " (cannot run with this target)" : "");
      });
    }
    showNotes(document.getElementById("draft-notes"), draftNotes);
    var typeNotes = [];
    var typeReasons = (compatibility.types || {})[target] || {};
    form.querySelectorAll("input[name=spec_types]").forEach(function (box) {
      var label = box.closest("label");
      mark(box, "", typeReasons[box.value], typeNotes);  // the reason names the type
      if (label) label.title = typeReasons[box.value] || "";
    });
    showNotes(document.getElementById("type-notes"), typeNotes);
    refreshNMax(types, draftSelect ? draftSelect.value : "");
  }

  // n_max is bounded by the type: a DFlash draft drafts at most its block size minus one.
  function refreshNMax(types, draft) {
    var input = control("n_max");
    if (!input) return;
    var limit = data.n_max.max;
    if (types.indexOf("draft-dflash") >= 0) {
      limit = Math.min(data.n_max.dflash_max, (compatibility.n_max || {})[draft] || data.n_max.dflash_max);
    }
    input.max = String(limit);
  }

  function fill(values) {
    Object.keys(values).forEach(function (name) {
      var value = values[name];
      if (Array.isArray(value)) {
        form.querySelectorAll('input[type=checkbox][name="' + name + '"]').forEach(function (box) {
          box.checked = value.indexOf(box.value) >= 0;
        });
        return;
      }
      var element = control(name);
      if (element && !(element instanceof RadioNodeList)) element.value = value;
    });
  }

  // A protocol's starting values: fitted to the chosen target's training context where the
  // server fitted them (the sweeps' lengths), else the form's defaults.
  function defaultsFor(name) {
    var target = control("target_model") ? control("target_model").value : "";
    var fitted = ((data.fitted || {})[target] || {})[name];
    return fitted || data.protocol_defaults[name] || {};
  }

  // A protocol chosen from the list, or a new target, starts from its numbers, except fields
  // the user typed.
  function protocolChanged() {
    var values = defaultsFor(protocol());
    var untouched = {};
    Object.keys(values).forEach(function (name) {
      if (!edited[name] && name !== "protocol") untouched[name] = values[name];
    });
    fill(untouched);
  }

  function choosePreset(name) {
    var preset = data.presets[name];
    if (!preset) return;
    var values = Object.assign({}, preset, defaultsFor(preset.protocol));
    fill(values);
    Object.keys(values).forEach(function (field) { delete edited[field]; });
    document.querySelectorAll("[data-preset]").forEach(function (link) {
      if (link.getAttribute("data-preset") === name) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    });
    if (window.history && window.history.replaceState) {
      window.history.replaceState(null, "", "?preset=" + encodeURIComponent(name));
    }
    refresh();
  }

  var body = document.getElementById("estimate-body");
  var pending = null;
  var sequence = 0;

  function estimate() {
    var mine = ++sequence;
    body.setAttribute("aria-busy", "true");
    fetch(data.estimate_url, {
      method: "POST",
      body: new FormData(form),
      credentials: "same-origin",
      headers: { Accept: "application/json" }
    })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (answer) {
        if (mine !== sequence || !answer) return;
        body.innerHTML = answer.html;  // rendered by the server's own template, escaped there
        body.removeAttribute("aria-busy");
        showFieldErrors(answer.errors);
      })
      .catch(function () { body.removeAttribute("aria-busy"); });
  }

  // Each refusal at its field, as the server words it, while the user types; the page's own
  // errors from the last submit are replaced by what the form holds now.
  function showFieldErrors(errors) {
    form.querySelectorAll("[aria-invalid]").forEach(function (element) {
      element.removeAttribute("aria-invalid");
    });
    form.querySelectorAll("[data-describedby]").forEach(function (element) {
      var before = element.getAttribute("data-describedby");
      if (before) element.setAttribute("aria-describedby", before);
      else element.removeAttribute("aria-describedby");
    });
    form.querySelectorAll(".field .errors").forEach(function (box) { box.remove(); });
    form.querySelectorAll(".field.has-error").forEach(function (field) {
      field.classList.remove("has-error");
    });
    var byField = {};
    errors.forEach(function (error) {
      if (!error.field) return;
      (byField[error.field] = byField[error.field] || []).push(error.message);
    });
    Object.keys(byField).forEach(function (name) {
      var field = document.getElementById("field-" + name);
      if (!field || field.hidden) return;
      var box = document.createElement("div");
      box.className = "errors live";
      box.id = "errors-" + name;
      box.setAttribute("role", "alert");
      var list = document.createElement("ul");
      list.className = "errorlist";
      byField[name].forEach(function (message) {
        var item = document.createElement("li");
        item.textContent = message;
        list.appendChild(item);
      });
      box.appendChild(list);
      field.appendChild(box);
      field.classList.add("has-error");
      var element = control(name);
      var inputs = element && element.setAttribute ? [element] : field.querySelectorAll("input, select, textarea");
      Array.prototype.forEach.call(inputs, function (input) {
        input.setAttribute("aria-invalid", "true");
        if (!input.hasAttribute("data-describedby")) {
          input.setAttribute("data-describedby", input.getAttribute("aria-describedby") || "");
        }
        input.setAttribute("aria-describedby", (input.getAttribute("data-describedby") + " " + box.id).trim());
      });
    });
  }

  function estimateSoon() {
    clearTimeout(pending);
    pending = setTimeout(estimate, 250);
  }

  function refresh() {
    refreshFields();
    refreshCompatibility();
    estimateSoon();
  }

  form.addEventListener("input", function (event) {
    if (event.target.name && event.target.name !== "protocol") edited[event.target.name] = true;
    refresh();
  });
  // A host's threads start at what is fastest there (data.threads), unless the user typed some.
  function hardwareChanged() {
    var advice = (data.threads || {})[control("hardware").value];
    var threads = control("threads");
    if (!advice || !threads || edited.threads) return;
    threads.value = advice.threads === null ? "" : String(advice.threads);
    var help = document.getElementById(threads.id + "_helptext");
    if (help) help.textContent = advice.help;
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "protocol" || event.target.name === "target_model") protocolChanged();
    if (event.target.name === "hardware") hardwareChanged();
    refresh();
  });
  document.querySelectorAll("[data-preset]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      choosePreset(link.getAttribute("data-preset"));
    });
  });
  refreshFields();
  refreshCompatibility();
  form.setAttribute("data-enhanced", "true");
})();

"""Admin: register model files (and mark test weights), import community CSVs and retire engine
builds, all through services."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from leaderboard import services
from leaderboard.accounts.signed_in import SignedInRequest
from leaderboard.forms import CsvImportForm, add_service_errors
from leaderboard.models import (
    Config,
    EngineBuild,
    Hardware,
    Job,
    LeaderboardEntry,
    ModelFile,
    ModelRequest,
    Run,
)
from leaderboard.services import board as board_services


class RegisterModelForm(forms.Form):
    path = forms.CharField(
        max_length=255,
        help_text="A .gguf file inside SPECBOARD_MODELS_DIR "
        "(a file on the Hugging Face Hub: register-hub/).",
    )
    role = forms.ChoiceField(
        choices=[("", "infer from the architecture")] + ModelFile.Role.choices, required=False
    )
    name = forms.CharField(max_length=200, required=False, help_text="Default: the file name.")


class RegisterHubModelForm(forms.Form):
    hf_repo = forms.CharField(
        max_length=200, label="Repository", help_text="On the Hugging Face Hub, e.g. org/name."
    )
    hf_file = forms.CharField(max_length=255, label="File", help_text="The .gguf file's path.")
    revision = forms.CharField(
        max_length=255,
        required=False,
        help_text="A branch, tag or commit; default main. Stored as the commit it resolves to.",
    )
    role = forms.ChoiceField(
        choices=[("", "infer from the architecture")] + ModelFile.Role.choices, required=False
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Default: repository/file@commit."
    )


def _service_form_view(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    *,
    form_class: type[forms.Form],
    title: str,
    action,
) -> HttpResponse:
    """Render a form in the admin; on a valid POST call the service and go back to the list."""
    form = form_class(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            message = action(form.cleaned_data)
        except services.ServiceError as error:
            add_service_errors(form, error)
        else:
            modeladmin.message_user(request, message, messages.SUCCESS)
            opts = modeladmin.model._meta
            return redirect(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": title,
        "form": form,
        "opts": modeladmin.model._meta,
    }
    return TemplateResponse(request, "admin/leaderboard/service_form.html", context)


@admin.register(ModelFile)
class ModelFileAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "path",
        "architecture",
        "role",
        "test_weights",
        "size_bytes",
        "hf_repo",
        "created_at",
    ]
    list_filter = ["role", "architecture", "test_weights"]
    search_fields = ["name", "path", "sha256", "hf_repo", "hf_file"]
    # The mark moves rows off or onto the ranking: it changes through the actions (a service).
    readonly_fields = [
        "path",
        "sha256",
        "size_bytes",
        "architecture",
        "metadata",
        "test_weights",
        "registered_by",
        "created_at",
        "hf_repo",
        "hf_file",
        "hf_revision",
    ]
    actions = ["reinspect", "mark_test_weights", "clear_test_weights"]

    def get_urls(self):
        register = path(
            "register/",
            self.admin_site.admin_view(self.register_view),
            name="leaderboard_modelfile_register",
        )
        register_hub = path(
            "register-hub/",
            self.admin_site.admin_view(self.register_hub_view),
            name="leaderboard_modelfile_register_hub",
        )
        return [register, register_hub, *super().get_urls()]

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context=None
    ) -> HttpResponse:
        return redirect("admin:leaderboard_modelfile_register")

    def register_view(self, request: SignedInRequest) -> HttpResponse:
        def register(data: dict) -> str:
            model = services.register_model(
                path=data["path"],
                role=data["role"] or None,
                name=data["name"] or None,
                registered_by=request.user,
            )
            return f"Registered {model.name} ({model.architecture}, sha256 {model.sha256[:12]}…)."

        return _service_form_view(
            self,
            request,
            form_class=RegisterModelForm,
            title="Register a model file",
            action=register,
        )

    def register_hub_view(self, request: SignedInRequest) -> HttpResponse:
        def register(data: dict) -> str:
            model = services.register_hub_model(
                hf_repo=data["hf_repo"],
                hf_file=data["hf_file"],
                revision=data["revision"],
                role=data["role"] or None,
                name=data["name"] or None,
                registered_by=request.user,
            )
            return (
                f"Registered {model.name} ({model.architecture}, commit {model.hf_revision[:12]}, "
                f"sha256 {model.sha256[:12]}…); GPU hosts fetch it on first use."
            )

        return _service_form_view(
            self,
            request,
            form_class=RegisterHubModelForm,
            title="Register a model by Hugging Face reference",
            action=register,
        )

    @admin.action(description="Read the selected files again")
    def reinspect(self, request: SignedInRequest, queryset) -> None:
        for model in queryset:
            try:
                if model.from_hub:
                    services.register_hub_model(
                        hf_repo=model.hf_repo,
                        hf_file=model.hf_file,
                        revision=model.hf_revision,
                        role=model.role,
                        name=model.name,
                        registered_by=request.user,
                    )
                    continue
                services.register_model(
                    path=model.path, role=model.role, name=model.name, registered_by=request.user
                )
            except services.ServiceError as error:
                self.message_user(request, f"{model.name}: {error}", messages.ERROR)

    @admin.action(description="Mark as test weights (their results leave the main ranking)")
    def mark_test_weights(self, request: HttpRequest, queryset) -> None:
        rows = board_services.mark_test_weights(models=queryset, test_weights=True)
        self.message_user(
            request,
            f"Marked as test weights: {', '.join(m.name for m in queryset)}. "
            f"Leaderboard rows moved off the main ranking: {rows}.",
        )

    @admin.action(description="Clear the test-weights mark (their results may rank again)")
    def clear_test_weights(self, request: HttpRequest, queryset) -> None:
        rows = board_services.mark_test_weights(models=queryset, test_weights=False)
        self.message_user(
            request,
            f"No longer test weights: {', '.join(m.name for m in queryset)}. "
            f"Leaderboard rows that may rank again: {rows}.",
        )


@admin.register(ModelRequest)
class ModelRequestAdmin(admin.ModelAdmin):
    """Users' requests for Hub models: approving registers the file (services.hub_models)."""

    list_display = ["hf_repo", "hf_file", "revision", "requester", "state", "model", "created_at"]
    list_filter = ["state"]
    search_fields = ["hf_repo", "hf_file", "requester__username"]
    readonly_fields = [
        "requester",
        "hf_repo",
        "hf_file",
        "revision",
        "state",
        "note",
        "model",
        "decided_by",
        "created_at",
        "decided_at",
    ]
    actions = ["approve", "refuse"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Approve: register the requested files")
    def approve(self, request: SignedInRequest, queryset) -> None:
        for model_request in queryset:
            try:
                model = services.approve_model_request(
                    model_request=model_request, admin=request.user
                )
            except services.ServiceError as error:
                self.message_user(request, f"{model_request}: {error}", messages.ERROR)
            else:
                self.message_user(request, f"{model_request}: registered as {model.name}.")

    @admin.action(description="Refuse the selected requests")
    def refuse(self, request: SignedInRequest, queryset) -> None:
        for model_request in queryset:
            try:
                services.refuse_model_request(
                    model_request=model_request,
                    admin=request.user,
                    note=f"refused by {request.user.get_username()}",
                )
            except services.ServiceError as error:
                self.message_user(request, f"{model_request}: {error}", messages.ERROR)
            else:
                self.message_user(request, f"{model_request}: refused.")


@admin.register(Hardware)
class HardwareAdmin(admin.ModelAdmin):
    list_display = [
        "gpu_name",
        "slug",
        "memory_bytes",
        "driver",
        "cuda",
        "queue_name",
        "self_reported",
    ]
    list_filter = ["self_reported"]
    search_fields = ["gpu_name", "slug", "host"]


@admin.register(EngineBuild)
class EngineBuildAdmin(admin.ModelAdmin):
    list_display = ["release", "retired", "note", "first_seen"]
    list_filter = ["retired"]
    actions = ["retire"]

    @admin.action(description="Retire the selected builds (their results leave the ranking)")
    def retire(self, request: HttpRequest, queryset) -> None:
        rows = sum(services.retire_engine_build(release=build.release) for build in queryset)
        self.message_user(
            request, f"Retired {queryset.count()} builds and {rows} leaderboard rows."
        )


@admin.register(Config)
class ConfigAdmin(admin.ModelAdmin):
    list_display = ["label", "key", "spec_label", "protocol", "n_max", "self_reported", "synthetic"]
    list_filter = ["protocol", "self_reported", "synthetic"]
    search_fields = ["label", "key", "target_name"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "config", "hardware", "owner", "status", "auto_scheduled", "created_at"]
    list_filter = ["status", "auto_scheduled", "hardware"]
    actions = ["cancel"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    @admin.action(description="Cancel the selected jobs")
    def cancel(self, request: SignedInRequest, queryset) -> None:
        cancelled = sum(services.cancel_job(job=job, user=request.user) for job in queryset)
        self.message_user(request, f"Cancelled {cancelled} jobs.")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "config",
        "hardware",
        "engine_release",
        "tps_definition",
        "n",
        "self_reported",
        "created_at",
    ]
    list_filter = ["self_reported", "tps_definition", "engine_release", "hardware"]
    change_list_template = "admin/leaderboard/run/change_list.html"

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_urls(self):
        view = path(
            "import-csv/",
            self.admin_site.admin_view(self.import_view),
            name="leaderboard_run_import",
        )
        return [view, *super().get_urls()]

    def import_view(self, request: SignedInRequest) -> HttpResponse:
        def run_import(data: dict) -> str:
            report = services.import_leaderboard_csv(
                content=data["file"].read(),
                hardware_name=data["hardware"],
                uploaded_by=request.user,
                baseline_run_name=data["baseline_run_name"] or None,
                target_name=data["target_name"] or None,
            )
            return (
                f"Imported {report.runs_created} runs ({report.runs_skipped} already present) into "
                f"{len(report.configs)} configs; baseline {report.baseline_run_name}."
            )

        return _service_form_view(
            self,
            request,
            form_class=CsvImportForm,
            title="Import leaderboard_runs.csv",
            action=run_import,
        )


@admin.register(LeaderboardEntry)
class LeaderboardEntryAdmin(admin.ModelAdmin):
    list_display = [
        "config",
        "hardware",
        "engine_release",
        "tokens_per_second",
        "runs_count",
        "speedup",
        "pairing_note",
        "retired",
        "test_weights",
    ]
    list_filter = ["retired", "self_reported", "test_weights", "hardware"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

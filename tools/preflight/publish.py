"""Preflight rows of publishing (docs/publishing.md): one per hub repository the configuration's ``publish`` block
uploads to, whether the user's token may write there: ready (the repository exists and the token may write to it,
or it does not exist yet and the token may create it in its namespace), no token, or no write access."""

from __future__ import annotations

from tools.preflight.rows import NO_TOKEN, NO_WRITE, NOT_CHECKED, OFFLINE_FIX, OFFLINE_NOTE, READY, Row
from workflow_scripts.hub_cache import HUB_UNREACHABLE_FIX, endpoint, network_failure

TOKEN_FIX = "set HF_TOKEN or run `hf auth login` with a token of the write role"
# the roles of a member of an organization that may create and write its repositories
WRITE_ROLES = ("admin", "write", "contributor")


def publish_repos(config: dict) -> list[str]:
    """The repositories the configuration publishes to, in grid order (none without publish.repo_prefix)."""
    from workflow_scripts.plan.grid import expand_grid
    from workflow_scripts.publish.plan import repo_id, selected

    publish = config.get("publish") or {}
    cells = selected(publish, expand_grid(config))
    return [repo_id(publish["repo_prefix"], model, lang, m.slug) for model, lang, m in cells]


def namespace_writable(who: dict, namespace: str) -> bool:
    """Whether the whoami answer's token may create repositories in ``namespace``."""
    if who.get("auth", {}).get("accessToken", {}).get("role") == "read":
        return False
    roles = {org.get("name"): org.get("roleInOrg") for org in who.get("orgs", [])}
    return namespace == who.get("name") or roles.get(namespace) in WRITE_ROLES


def repo_row(api, who: dict, repo: str) -> Row:
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    item, namespace = f"publish {repo}", repo.split("/")[0]
    try:
        api.auth_check(repo, write=True)
    except RepositoryNotFoundError:
        if namespace_writable(who, namespace):
            return Row(READY, item, f"created on the first upload in {namespace} (as {who.get('name')})")
        return Row(
            NO_WRITE,
            item,
            f"{who.get('name')} may not create repositories in {namespace}",
            f"use a token of the write role for {namespace}, or change publish.repo_prefix",
        )
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        return Row(
            NO_WRITE,
            item,
            f"the hub refused writing (HTTP {status}) as {who.get('name')}",
            f"ask for write access to {repo}, or change publish.repo_prefix",
        )
    return Row(READY, item, f"exists; {who.get('name')} may write to it")


def publish_rows(config: dict, online: bool) -> list[Row]:
    """A row per repository publish uploads to (module docstring)."""
    repos = publish_repos(config)
    if not repos:
        return []
    if not online:
        return [Row(NOT_CHECKED, f"publish {r}", OFFLINE_NOTE + ": write access", OFFLINE_FIX) for r in repos]
    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    if not get_token():
        return [Row(NO_TOKEN, f"publish {r}", "no Hugging Face token", TOKEN_FIX) for r in repos]
    api = HfApi(endpoint=endpoint())
    try:
        who = api.whoami()
    except HfHubHTTPError as e:
        detail = f"the hub refused the token (HTTP {getattr(e.response, 'status_code', None)})"
        return [Row(NO_TOKEN, f"publish {r}", detail, TOKEN_FIX) for r in repos]
    except Exception as e:  # no answer from the hub: a row, never a traceback
        failure = network_failure(e)
        if failure is None:
            raise
        return [Row(failure[0], f"publish {r}", failure[1], HUB_UNREACHABLE_FIX) for r in repos]
    return [repo_row(api, who, r) for r in repos]

"""A JupyterHub for a class on one machine: `make classroom` starts it (scripts/classroom.py sets the variables).

Everyone logs in with the one password the script prints (DummyAuthenticator) and gets a JupyterLab server of
their own, started as the same system user with a home folder of its own (SimpleLocalProcessSpawner): right for
trying the course as a class on a laptop, wrong for a real class (README.md in this folder says what to change).
The course is installed once, in the environment this hub runs from, and every server uses it. nbgrader's
exchange, the folder assignments move through, is CLASSROOM_DIR/exchange.
"""
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub provides it)
here = Path(os.environ["CLASSROOM_DIR"])
students = os.environ.get("CLASSROOM_STUDENTS", "alice,bob").split(",")
instructor = os.environ.get("CLASSROOM_INSTRUCTOR", "instructor")

c.JupyterHub.ip = "127.0.0.1"   # this machine only: a real class needs HTTPS on a public address
c.JupyterHub.port = int(os.environ.get("CLASSROOM_PORT", "8010"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("CLASSROOM_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('CLASSROOM_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.command = [os.environ.get("CLASSROOM_PROXY", "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(here / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{here / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(here / "cookie_secret")
c.JupyterHub.pid_file = str(here / "hub.pid")

c.JupyterHub.authenticator_class = "dummy"   # one shared password: a demo, never a class
c.DummyAuthenticator.password = os.environ["CLASSROOM_PASSWORD"]
c.Authenticator.allowed_users = {instructor, *students}
c.Authenticator.admin_users = {instructor}

c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(here / "home" / "{username}")
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.default_url = "/lab"
if hasattr(os, "geteuid") and os.geteuid() == 0:   # a container or CI runs as root, which JupyterLab refuses
    c.Spawner.args = ["--allow-root"]
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
# nbgrader reads CLASSROOM_DIR/config/nbgrader_config.py in every server: the course, the exchange, and (one
# system user for all) the student ID from the hub's user name
c.Spawner.environment = {"JUPYTER_CONFIG_PATH": str(here / "config"), "CLASSROOM_DIR": str(here),
                         "PYTHONHASHSEED": "0"}

# A service the grading script and the test act through: it may start servers and reach them, nothing more.
if token := os.environ.get("CLASSROOM_SERVICE_TOKEN"):
    c.JupyterHub.services = [{"name": "classroom", "api_token": token}]
    c.JupyterHub.load_roles = [{"name": "classroom", "services": ["classroom"],
                                "scopes": ["admin:servers", "access:servers", "read:users"]}]

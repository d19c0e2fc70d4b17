"""The ``localreason`` command group (its options, its help) and the console-script entry point, which turns
errors into messages and exit codes. The commands register themselves on ``cli`` from their own modules."""

from __future__ import annotations

import os
import sys

import click

from ..config import DEBUG_ENV, HOME_ENV
from ..errors import LocalReasonError
from .common import Ctx


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--home", type=click.Path(file_okay=False), envvar=HOME_ENV,
              help=f"Library folder (default: ${HOME_ENV} or the per-user data folder).")  # fmt: skip
@click.version_option(package_name="localreason")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """Ask questions of your own documents, offline, with quotations checked word for word.

    \b
    Start with:
      localreason demo                         # try it on the bundled samples
      localreason ingest ~/notes -c notes      # add your own files
      localreason tui                          # ask and read in the terminal UI
      localreason ask "When is the rent due?"  # one answer, in the shell
      localreason library                      # what is in the library

    Each command explains itself: localreason COMMAND --help
    """
    ctx.obj = Ctx(home)
    ctx.call_on_close(ctx.obj.close)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the command and turn errors into messages and exit codes."""
    try:
        code = cli.main(args=argv, prog_name="localreason", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        code = 130
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except LocalReasonError as exc:
        click.echo(f"Error: {exc.message}", err=True)
        if exc.hint:
            click.echo(exc.hint, err=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        code = 130
    except Exception as exc:  # a bug: say so plainly, keep the traceback for those who ask
        if os.environ.get(DEBUG_ENV):
            raise
        click.echo(f"Internal error: {exc.__class__.__name__}: {exc}\n"
                   f"This is a bug in localreason. Run again with {DEBUG_ENV}=1 to see the traceback.",
                   err=True)  # fmt: skip
        code = 70
    sys.exit(code if isinstance(code, int) else 0)

"""The `nerplat` command. Each command group lives in its own module and registers itself here."""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from nerplat.cli.help_text import flow_help
from nerplat.cli.options import Verbosity, err_console, package_version
from nerplat.cli.process_exit import run_program
from nerplat.errors import StorageError, UserInputError
from nerplat.unfolded import print_message

app = typer.Typer(
    name="nerplat",
    help="Declarative, Ray-distributed tuning for imbalanced and low-resource NER.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"nerplat {package_version()}")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    quiet: bool = typer.Option(
        False, "--quiet", "-q",
        help="Print results and errors only: no progress, notes or OK lines (before or after the command).",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Also print library logs (Ray's workers, MLflow, Optuna) (before or after the command)."
    ),
) -> None:
    """Declarative, Ray-distributed tuning for imbalanced and low-resource NER."""
    if quiet and verbose:
        raise UserInputError("give -q (quiet) or -v (verbose), not both")
    Verbosity.level = -1 if quiet else 1 if verbose else 0


def _register_commands() -> None:
    """Adds every command group once: `main` runs many times in one process (tests, embedding tools), and
    each registration appends to the app, so repeating it made every call slower than the last."""
    if app.registered_commands:
        return
    # lazy: the command groups, added by the first main(), so that `import nerplat.cli` stays light
    from nerplat.cli import (
        analyze_commands,
        bench_commands,
        claims_commands,
        ui_commands,
        cluster_commands,
        data_commands,
        model_commands,
        run_commands,
        spec_commands,
        train_commands,
    )

    groups = (
        spec_commands, data_commands, train_commands, bench_commands, run_commands, model_commands, ui_commands,
        analyze_commands, claims_commands, cluster_commands,
    )
    for module in groups:
        module.register(app)
    flow_help(app)


def report_problems(error: UserInputError) -> None:
    """Every problem on stderr, in a terminal wrapped between words at its width (a path longer than a
    line stands whole on its own); its text is the user's (paths, values), never rich markup."""
    for problem in error.problems:
        print_message(err_console, f"[bold red]error:[/] {escape(str(problem))}")


GLOBAL_FLAGS = ("-q", "--quiet", "-v", "--verbose")


def hoist_global_flags(argv: list[str]) -> list[str]:
    """`-q`/`-v` anywhere before a `--` moved in front of the command, where click reads them:
    `nerplat plan SPEC -q` is `nerplat -q plan SPEC`. No command has options or values of those names."""
    end = argv.index("--") if "--" in argv else len(argv)
    flags = [word for word in argv[:end] if word in GLOBAL_FLAGS]
    return flags + [word for word in argv[:end] if word not in GLOBAL_FLAGS] + argv[end:]


def main(argv: list[str] | None = None) -> int:
    """Entry point: user-input errors print every problem and exit 2; nothing else is swallowed.

    Without `argv` it is the program (the `nerplat` script, `python -m nerplat.cli`): it reads the
    command line and ends the process itself once the command is done (`run_program`, which skips
    the interpreter's teardown). With `argv` (tests, tools that embed the CLI) it returns the exit
    code and never ends the process.
    """
    if argv is None:
        run_program(lambda: _run(sys.argv[1:]))
    return _run(list(argv))


def _run(argv: list[str]) -> int:
    from typer._click.exceptions import ClickException
    from typer.exceptions import Abort

    try:
        _register_commands()  # in the try: Ctrl-C while the command modules load is an interruption too
        return app(args=hoist_global_flags(argv), standalone_mode=False) or 0
    except UserInputError as error:
        report_problems(error)
        return UserInputError.exit_code
    except StorageError as error:
        print_message(err_console, f"[bold red]error:[/] {escape(str(error))}")
        return StorageError.exit_code
    except typer.Exit as done:
        return done.exit_code
    except ClickException as error:  # usage errors: typer 0.29 vendors click, so not click.ClickException
        error.show()
        return error.exit_code
    except (KeyboardInterrupt, Abort):
        err_console.print("interrupted")
        return 130



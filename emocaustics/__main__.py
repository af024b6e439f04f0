from emocaustics.cli import run

run()

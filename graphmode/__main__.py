from graphmode.cli import app

app(prog_name="graphmode")

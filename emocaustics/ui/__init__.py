"""The workbench (`emocaustics ui`): a local page that runs the command line's verbs on files a person picks."""

"""flowc.hosts: the programs that serve flows to people and other programs (`flowc inspect`)."""

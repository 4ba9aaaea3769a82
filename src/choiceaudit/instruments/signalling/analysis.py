"""One scored arm analysed on its own, for a caller that lays out arms one at a time (the
package's ``analyse_signalling_runs`` analyses every arm of an instrument together):
``analyse_arm`` places one arm's choices against the frozen references (an ``AnalysedArm``,
whose rows are ``CoordinateRow`` s).
"""

from choiceaudit.instruments.signalling._analysed_arm import AnalysedArm
from choiceaudit.instruments.signalling._analysis import CoordinateRow
from choiceaudit.instruments.signalling._run_analysis import analyse_arm

__all__ = ["AnalysedArm", "CoordinateRow", "analyse_arm"]

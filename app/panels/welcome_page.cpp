// WelcomePage: the first start's ways in, over the empty charts (see welcome_page.h).
// See tests/app/tst_window_trust.cpp (welcomeOffersAWayIn).
#include "panels/welcome_page.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace paralab {

WelcomePage::WelcomePage(QWidget* parent) : QFrame(parent) {
  setObjectName("welcomePage");
  setAutoFillBackground(true);  // the empty charts under it do not show through
  m_card = new QFrame(this);
  m_card->setObjectName("welcomeCard");
  m_card->setFrameShape(QFrame::StyledPanel);
  m_card->setMaximumWidth(560);
  auto* card = new QVBoxLayout(m_card);
  card->setContentsMargins(28, 24, 28, 24);
  card->setSpacing(12);

  auto* title = new QLabel(tr("Welcome to ParaLab"), m_card);
  QFont big = title->font();
  big.setPointSizeF(big.pointSizeF() * 1.6);
  big.setBold(true);
  title->setFont(big);
  auto* what = new QLabel(
      tr("A lab for how neural-network training is made parallel. You train a real model on "
         "this machine, split it across ranks the way data, tensor, pipeline and expert "
         "parallelism do, and every chart shows what the run measured, with the formulas "
         "beside it as references."),
      m_card);
  what->setWordWrap(true);
  card->addWidget(title);
  card->addWidget(what);
  m_choices = new QVBoxLayout;
  m_choices->setSpacing(10);
  card->addLayout(m_choices);
  // Where the lessons are once this page is gone: the first tab of the column on the left.
  auto* pointer = new QLabel(tr("◀  The lessons are always in the <b>Lessons</b> tab on the left; "
                                "Help ▸ Welcome brings this page back."),
                             m_card);
  pointer->setObjectName("welcomePointer");
  pointer->setWordWrap(true);
  card->addWidget(pointer);

  auto* row = new QHBoxLayout;
  row->addStretch(1);
  row->addWidget(m_card, 4);
  row->addStretch(1);
  auto* column = new QVBoxLayout(this);
  column->addStretch(1);
  column->addLayout(row);
  column->addStretch(2);
}

void WelcomePage::addChoice(const QString& id, const QString& title, const QString& description) {
  auto* button = new QPushButton(title, m_card);
  button->setObjectName("welcome-" + id);
  QFont bold = button->font();
  bold.setBold(true);
  button->setFont(bold);
  button->setMinimumHeight(2 * button->sizeHint().height());
  auto* words = new QLabel(description, m_card);
  words->setWordWrap(true);
  m_choices->addWidget(button);
  m_choices->addWidget(words);
  connect(button, &QPushButton::clicked, this, [this, id] { emit chosen(id); });
}

void WelcomePage::cover(const QRect& area) {
  setGeometry(area);
  raise();
}

}  // namespace paralab
